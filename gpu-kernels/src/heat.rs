//! The 1-D heat equation `u_t = α u_xx` on a rod whose ends are held at fixed temperatures,
//! stepped explicitly: `u[i] += k (u[i-1] - 2 u[i] + u[i+1])`, `k = α Δt / Δx²` (stable for
//! `k ≤ 1/2`). Two ways: every time step in one cooperative launch, its threads meeting at a
//! grid barrier between steps ([`heat_steps`]), and one launch per step ([`heat_step`]).

use kernel_runtime::prelude::*;

/// The temperature of a point after one step, from its own (`mid`) and its neighbours' before.
#[device]
pub fn heat_point(k: f32, left: f32, mid: f32, right: f32) -> f32 {
    mid + k * (left - 2.0 * mid + right)
}

/// `steps` time steps of `u`, in one cooperative launch of any grid: each thread updates the
/// points `grid(1)`, `grid(1) + gridsize(1)`, ... into `next`, then, after a grid barrier (its
/// neighbours' threads read the points it keeps), copies them back, then waits at a grid barrier
/// again before the next step.
#[kernel]
pub fn heat_steps(steps: u32, k: f32, u: &mut [f32], next: &mut [f32]) {
    let start = grid(1);
    let stride = gridsize(1);
    let n = u.len();
    for _ in 0..steps {
        let mut i = start;
        while i < n {
            next[i] = if i == 0 || i + 1 == n {
                u[i]
            } else {
                heat_point(k, u[i - 1], u[i], u[i + 1])
            };
            i += stride;
        }
        grid_sync();
        let mut i = start;
        while i < n {
            u[i] = next[i];
            i += stride;
        }
        grid_sync();
    }
}

/// One time step of `u` into `next`, a thread per point.
#[kernel]
pub fn heat_step(k: f32, u: &[f32], next: &mut [f32]) {
    let i = grid(1);
    let n = u.len();
    if i < n && i < next.len() {
        next[i] = if i == 0 || i + 1 == n {
            u[i]
        } else {
            heat_point(k, u[i - 1], u[i], u[i + 1])
        };
    }
}
