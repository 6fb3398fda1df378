// Dispatch math shared by the kernel wrappers: 2-D grids that stay under the per-dimension
// workgroup limit, and uniform blocks packed in WGSL's layout (4-byte scalars, 16-byte size).

export interface Grid {
  /** Workgroups in x and y. */
  workgroups: [number, number];
  /** Invocations per grid row (workgroups in x times workgroup size), passed to the shader. */
  gridX: number;
}

/** A grid of at least `invocations` invocations of `workgroupSize`, folded into 2-D. */
export function grid1d(invocations: number, workgroupSize: number, maxPerDimension = 65535): Grid {
  const groups = Math.max(1, Math.ceil(invocations / workgroupSize));
  if (groups <= maxPerDimension) return { workgroups: [groups, 1], gridX: groups * workgroupSize };
  const x = maxPerDimension;
  return { workgroups: [x, Math.ceil(groups / x)], gridX: x * workgroupSize };
}

export type UniformField = ['u32' | 'i32' | 'f32', number];

/** Packs scalars in order into a uniform block (WGSL struct of 4-byte scalars, size rounded to 16). */
export function packUniform(fields: UniformField[]): Uint8Array {
  const bytes = new Uint8Array(Math.max(16, Math.ceil((fields.length * 4) / 16) * 16));
  const view = new DataView(bytes.buffer);
  fields.forEach(([type, value], i) => {
    if (type === 'u32') view.setUint32(i * 4, value >>> 0, true);
    else if (type === 'i32') view.setInt32(i * 4, value | 0, true);
    else view.setFloat32(i * 4, value, true);
  });
  return bytes;
}
