//! Plain-Rust references the kernels are checked against (sequential, obviously right).

use ndarray::Array2;

/// `a + b`, element by element.
pub fn add(a: &[f32], b: &[f32]) -> Vec<f32> {
    a.iter().zip(b).map(|(x, y)| x + y).collect()
}

/// The 3×3 mean stencil (sum widened to `i32`, floor division by 9 as Python's `// 9`); border
/// pixels copied from
/// `out` (they are left as they are).
pub fn smooth(x: &Array2<i8>, out: &Array2<i8>) -> Array2<i8> {
    let (n, m) = x.dim();
    let mut r = out.clone();
    for i in 1..n.saturating_sub(1) {
        for j in 1..m.saturating_sub(1) {
            let mut s = 0i32;
            for di in 0..3 {
                for dj in 0..3 {
                    s += x[[i + di - 1, j + dj - 1]] as i32;
                }
            }
            r[[i, j]] = s.div_euclid(9) as i8;
        }
    }
    r
}

/// ∫∫ sin(x + y) over [0, π]² by the midpoint rule on an `n × n` grid, summed row by row as
/// the kernels do.
pub fn integrate2d(n: usize) -> f64 {
    (0..n).map(|i| integrate2d_row(n, i)).sum()
}

/// Row `i` of [`integrate2d`]: the midpoint sum over `j` at `x = (i + ½)·h`, times `h²`.
pub fn integrate2d_row(n: usize, i: usize) -> f64 {
    let h = std::f64::consts::PI / n as f64;
    let x = (i as f64 + 0.5) * h;
    (0..n)
        .map(|j| (x + (j as f64 + 0.5) * h).sin())
        .sum::<f64>()
        * h
        * h
}

/// `a @ b` by the textbook triple loop, in `f64` then rounded.
pub fn matmul(a: &Array2<f32>, b: &Array2<f32>) -> Array2<f32> {
    let (n, k) = a.dim();
    let m = b.dim().1;
    Array2::from_shape_fn((n, m), |(i, j)| {
        (0..k)
            .map(|q| a[[i, q]] as f64 * b[[q, j]] as f64)
            .sum::<f64>() as f32
    })
}

/// Whether `sorted` is in order and a permutation of `original`.
pub fn is_sorted_permutation(original: &[u32], sorted: &[u32]) -> bool {
    if original.len() != sorted.len() || !sorted.windows(2).all(|w| w[0] <= w[1]) {
        return false;
    }
    let mut o = original.to_vec();
    o.sort_unstable();
    o == sorted
}

/// A deterministic pseudo-random sequence (SplitMix64) for test and example inputs.
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// A float in `[-1, 1)`.
    pub fn next_f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
}
