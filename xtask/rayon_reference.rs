//! The reference programs of `gpu-kernels`, written by hand for the CPU as rayon loops: what a
//! Rust programmer would write without the kernel DSL. `cargo xtask compile-time` builds this
//! file as a crate of its own, edits `add` and times the release rebuild: the cost of compiling
//! the same CPU code with no DSL, beside `gpu-kernels`'.

use rayon::prelude::*;

/// add-list: `c = a + b`.
pub fn add(a: &[f32], b: &[f32], c: &mut [f32]) {
    c.par_iter_mut()
        .zip(a.par_iter())
        .zip(b.par_iter())
        .for_each(|((c, a), b)| *c = a + b);
}

/// add-list, four elements a step.
pub fn add_wide(a: &[f32], b: &[f32], c: &mut [f32]) {
    c.par_chunks_mut(4)
        .zip(a.par_chunks(4))
        .zip(b.par_chunks(4))
        .for_each(|((c, a), b)| {
            for ((c, a), b) in c.iter_mut().zip(a).zip(b) {
                *c = a + b;
            }
        });
}

/// smooth: the 3×3 mean (integer division by 9) of the interior of an `n × m` image in C order;
/// the border is left as it is.
pub fn smooth(x: &[i8], out: &mut [i8], n: usize, m: usize) {
    if n < 3 || m < 3 {
        return;
    }
    out[m..(n - 1) * m]
        .par_chunks_mut(m)
        .enumerate()
        .for_each(|(r, row)| {
            let (up, mid, down) = (
                &x[r * m..(r + 1) * m],
                &x[(r + 1) * m..(r + 2) * m],
                &x[(r + 2) * m..(r + 3) * m],
            );
            for (j, o) in row.iter_mut().enumerate().take(m - 1).skip(1) {
                let s: i32 = (j - 1..=j + 1)
                    .map(|k| up[k] as i32 + mid[k] as i32 + down[k] as i32)
                    .sum();
                *o = s.div_euclid(9) as i8;
            }
        });
}

/// One row of integrate2d: the midpoint rule over row `i` of the `n × n` grid on [0, π]².
fn row_sum(n: usize, i: usize) -> f64 {
    let h = std::f64::consts::PI / n as f64;
    let x = (i as f64 + 0.5) * h;
    (0..n)
        .map(|j| (x + (j as f64 + 0.5) * h).sin())
        .sum::<f64>()
        * h
        * h
}

/// integrate2d: ∫∫ sin(x + y) over [0, π]², a row per task.
pub fn integrate2d(n: usize) -> f64 {
    (0..n).into_par_iter().map(|i| row_sum(n, i)).sum()
}

/// integrate2d, the rows of each block of `block` rows summed together first.
pub fn integrate2d_blocks(n: usize, block: usize) -> Vec<f64> {
    (0..n.div_ceil(block))
        .into_par_iter()
        .map(|b| {
            (b * block..((b + 1) * block).min(n))
                .map(|i| row_sum(n, i))
                .sum()
        })
        .collect()
}

/// matmul: `c = a @ b` (`n × k` by `k × m`, C order), tiles of `TILE` columns of `b` at a time.
pub fn matmul(a: &[f32], b: &[f32], c: &mut [f32], k: usize, m: usize) {
    const TILE: usize = 64;
    c.par_chunks_mut(m).enumerate().for_each(|(i, crow)| {
        crow.fill(0.0);
        let arow = &a[i * k..(i + 1) * k];
        for j0 in (0..m).step_by(TILE) {
            let j1 = (j0 + TILE).min(m);
            for (q, &aiq) in arow.iter().enumerate() {
                let brow = &b[q * m + j0..q * m + j1];
                for (cj, &bj) in crow[j0..j1].iter_mut().zip(brow) {
                    *cj += aiq * bj;
                }
            }
        }
    });
}

/// quicksort: a parallel quicksort, the halves sorted side by side below a cut-off.
pub fn quicksort(keys: &mut [u32]) {
    if keys.len() <= 4096 {
        keys.sort_unstable();
        return;
    }
    let pivot = median3(keys[0], keys[keys.len() / 2], keys[keys.len() - 1]);
    let (mut lo, mut hi) = (0, keys.len() - 1);
    loop {
        while keys[lo] < pivot {
            lo += 1;
        }
        while keys[hi] > pivot {
            hi -= 1;
        }
        if lo >= hi {
            break;
        }
        keys.swap(lo, hi);
        lo += 1;
        hi -= 1;
    }
    let (left, right) = keys.split_at_mut(hi + 1);
    rayon::join(|| quicksort(left), || quicksort(right));
}

fn median3(a: u32, b: u32, c: u32) -> u32 {
    a.max(b).min(a.min(b).max(c))
}

/// xoroshiro128+, one generator per task, as the kernels' random numbers.
#[derive(Clone, Copy)]
pub struct Xoroshiro128p(pub u64, pub u64);

impl Xoroshiro128p {
    /// A uniform draw in [0, 1).
    pub fn uniform_f32(&mut self) -> f32 {
        let (s0, mut s1) = (self.0, self.1);
        let r = s0.wrapping_add(s1);
        s1 ^= s0;
        self.0 = s0.rotate_left(55) ^ s1 ^ (s1 << 14);
        self.1 = s1.rotate_left(36);
        (r >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// Monte Carlo π: the draws of each generator that fall in the quarter circle.
pub fn pi_hits(states: &mut [Xoroshiro128p], draws: u32, hits: &mut [u32]) {
    states
        .par_iter_mut()
        .zip(hits.par_iter_mut())
        .for_each(|(s, h)| {
            *h = (0..draws)
                .filter(|_| {
                    let (x, y) = (s.uniform_f32(), s.uniform_f32());
                    x * x + y * y <= 1.0
                })
                .count() as u32;
        });
}

/// A 3-D array (`nz × ny × nx`, C order) of uniform draws, a generator per z-slice.
pub fn fill_uniform_3d(states: &mut [Xoroshiro128p], out: &mut [f32], plane: usize) {
    out.par_chunks_mut(plane)
        .zip(states.par_iter_mut())
        .for_each(|(slice, s)| slice.iter_mut().for_each(|v| *v = s.uniform_f32()));
}

/// The 1-D heat equation: `steps` explicit steps of `u`, the ends held.
pub fn heat_steps(steps: u32, k: f32, u: &mut [f32], next: &mut [f32]) {
    let n = u.len();
    for _ in 0..steps {
        next.par_iter_mut().enumerate().for_each(|(i, v)| {
            *v = if i == 0 || i + 1 == n {
                u[i]
            } else {
                u[i] + k * (u[i - 1] - 2.0 * u[i] + u[i + 1])
            };
        });
        u.copy_from_slice(next);
    }
}
