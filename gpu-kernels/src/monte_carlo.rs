//! Random numbers on the device, as in Numba's documentation of `numba.cuda.random`: a Monte
//! Carlo estimate of π, and a 3-D array filled with uniform numbers through `grid(3)` and
//! `gridsize(3)`. Each thread draws from its own generator, `states[thread]`, made on the host
//! by [`create_xoroshiro128p_states`].

use kernel_runtime::prelude::*;
use kernel_runtime::random::{xoroshiro128p_uniform_f32, Xoroshiro128pState};

/// Thread `i` draws `draws` points of the unit square from `states[i]` and writes to `hits[i]`
/// how many fall in the quarter circle: `4 · Σ hits / (threads · draws)` estimates π.
#[kernel]
pub fn pi_hits(states: &mut [Xoroshiro128pState], draws: u32, hits: &mut [u32]) {
    let i = grid(1);
    if i < hits.len() && i < states.len() {
        let mut inside = 0;
        for _ in 0..draws {
            let x = xoroshiro128p_uniform_f32(&mut states, i);
            let y = xoroshiro128p_uniform_f32(&mut states, i);
            if x * x + y * y <= 1.0 {
                inside += 1;
            }
        }
        hits[i] = inside;
    }
}

/// Fills `out` with uniform numbers, grid-stride in all three dimensions: thread `(x, y, z)`
/// of the grid draws from `states[(z · height + y) · width + x]` (`width × height` the grid's
/// threads along x and y), so `states` needs one state per thread of the grid.
#[kernel]
pub fn fill_uniform_3d(states: &mut [Xoroshiro128pState], out: &mut Array3<f32>) {
    let (x0, y0, z0) = grid(3);
    let (sx, sy, sz) = gridsize(3);
    let thread = (z0 * sy + y0) * sx + x0;
    let (nz, ny, nx) = out.dim();
    let mut z = z0;
    while z < nz {
        let mut y = y0;
        while y < ny {
            let mut x = x0;
            while x < nx {
                out[[z, y, x]] = xoroshiro128p_uniform_f32(&mut states, thread);
                x += sx;
            }
            y += sy;
        }
        z += sz;
    }
}
