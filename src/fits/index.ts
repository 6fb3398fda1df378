// Public surface of skystack's FITS I/O (2-D images and 3-D plane cubes in the primary HDU, an
// image extension or a tile-compressed HDU, plain or gzip-compressed; writes primary images).
export { FitsError, isFitsError, type FitsErrorCode } from './errors.js';
export { type CardValue, type FitsCard, parseCard, formatCard, BLOCK_LENGTH, CARD_LENGTH } from './card.js';
export { FitsHeader, type SetOptions } from './header.js';
export { type Bitpix, type ImageLayout, type StorageKind } from './layout.js';
export { type PixelArray } from './samples.js';
export { FitsReader, readFitsHeader, readFitsImage, readFitsNative, type FitsImage, type PlainReopen, type RowBand, type RowScratch, type FloatType } from './read.js';
export { writeFits, buildHeader, toUint16, isPartialWrite, partialWriteName, type ImageToWrite, type WriteOptions } from './write.js';
export * as keys from './keys.js';
