// The header of the image a tile-compressed table stands for: the table's own structure
// (XTENSION, NAXISn, TFORMn, ...) and the compression keywords go, the image's structural
// keywords come back from their Z-prefixed copies (ZBITPIX → BITPIX, ZNAXISn → NAXISn, ...),
// and every other card (EXPTIME, BZERO, BLANK, WCS, ...) stays as written, in order. This is
// what funpack writes as the decompressed file's header, so keys read by the pipeline (and a
// calibrated frame's carried-over header) look the same for .fits and .fz lights.

import type { FitsCard } from '../card.js';
import { FitsHeader } from '../header.js';

/** Table and compression keywords that describe the container, not the image. */
const CONTAINER = /^(XTENSION|BITPIX|NAXIS\d*|PCOUNT|GCOUNT|TFIELDS|TTYPE\d+|TFORM\d+|TUNIT\d+|TDIM\d+|TSCAL\d+|TZERO\d+|TNULL\d+|TDISP\d+|THEAP|ZIMAGE|ZCMPTYPE|ZTILE\d+|ZNAME\d+|ZVAL\d+|ZMASKCMP|ZQUANTIZ|ZDITHER0|ZSCALE|ZZERO|ZBLANK|CHECKSUM|DATASUM)$/;

/** Z-prefixed copies of the image's own structural keywords. */
const RESTORED: Record<string, string> = {
  ZSIMPLE: 'SIMPLE',
  ZTENSION: 'XTENSION',
  ZBITPIX: 'BITPIX',
  ZNAXIS: 'NAXIS',
  ZPCOUNT: 'PCOUNT',
  ZGCOUNT: 'GCOUNT',
  ZEXTEND: 'EXTEND',
  ZBLOCKED: 'BLOCKED',
  ZHECKSUM: 'CHECKSUM',
  ZDATASUM: 'DATASUM',
};

const restoredKey = (key: string): string | undefined => RESTORED[key] ?? (/^ZNAXIS\d+$/.test(key) ? key.slice(1) : undefined);

export function imageHeaderOfTable(table: FitsHeader): FitsHeader {
  const structural: FitsCard[] = [];
  const rest: FitsCard[] = [];
  for (const card of table.cards) {
    if (card.value === undefined || card.hierarch) {
      rest.push(card);
      continue;
    }
    const key = restoredKey(card.key);
    if (key !== undefined) {
      const restored: FitsCard = { ...card, key };
      delete restored.raw; // the card image names the Z keyword
      (/^(SIMPLE|XTENSION|BITPIX|NAXIS\d*)$/.test(key) ? structural : rest).push(restored);
      continue;
    }
    if (CONTAINER.test(card.key)) continue;
    if (card.key === 'EXTNAME' && card.value === 'COMPRESSED_IMAGE') continue;
    rest.push(card);
  }
  const order = (k: string) => (k === 'SIMPLE' || k === 'XTENSION' ? 0 : k === 'BITPIX' ? 1 : k === 'NAXIS' ? 2 : 3 + Number(k.slice(5)));
  structural.sort((a, b) => order(a.key) - order(b.key));
  return new FitsHeader([...structural, ...rest]);
}
