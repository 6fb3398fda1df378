// The four postprocess phases, re-exported so run.ts keeps one import site: ASTROMETRY
// (phases/astrometry.ts), BGE (phases/bge.ts), PCC (phases/pcc.ts) and HYPERMETRIC_STRETCH
// (phases/hms.ts). All are real now; the placeholders that stood in for ASTROMETRY and PCC are gone.

export { astrometryPhase } from './astrometry.js';
export { bgePhase } from './bge.js';
export { pccPhase } from './pcc.js';
export { hmsPhase } from './hms.js';
