//! Three-dimensional extents and coordinates, as CUDA's `dim3`.

/// A three-dimensional extent or coordinate (`threadIdx`, `blockDim`, ...), `x` fastest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[repr(C)]
pub struct Dim3 {
    /// The x component (the fastest-varying one).
    pub x: u32,
    /// The y component.
    pub y: u32,
    /// The z component.
    pub z: u32,
}

impl Dim3 {
    /// `(0, 0, 0)`.
    pub const ZERO: Dim3 = Dim3 { x: 0, y: 0, z: 0 };

    /// A new `Dim3`.
    #[inline(always)]
    pub const fn new(x: u32, y: u32, z: u32) -> Self {
        Dim3 { x, y, z }
    }

    /// `x * y * z`, without overflow.
    #[inline(always)]
    pub const fn volume(self) -> u64 {
        self.x as u64 * self.y as u64 * self.z as u64
    }

    /// The linear index (x fastest) of the coordinate `c` within `self`, as a `u32` (a block's
    /// threads).
    #[inline(always)]
    pub const fn flatten(self, c: Dim3) -> u32 {
        c.x + self.x * (c.y + self.y * c.z)
    }

    /// The linear index (x fastest) of the coordinate `c` within `self`, as a `u64` (a grid's
    /// blocks).
    #[inline(always)]
    pub const fn linear(self, c: Dim3) -> u64 {
        c.x as u64 + self.x as u64 * (c.y as u64 + self.y as u64 * c.z as u64)
    }

    /// The coordinate whose linear index (x fastest) within `self` is `i`.
    #[inline(always)]
    pub const fn unflatten(self, i: u64) -> Dim3 {
        let x = self.x as u64;
        let y = self.y as u64;
        Dim3 {
            x: (i % x) as u32,
            y: ((i / x) % y) as u32,
            z: (i / (x * y)) as u32,
        }
    }
}

impl core::fmt::Display for Dim3 {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "({}, {}, {})", self.x, self.y, self.z)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unflatten_is_x_fastest() {
        let d = Dim3::new(3, 2, 2);
        let coords: Vec<Dim3> = (0..d.volume()).map(|i| d.unflatten(i)).collect();
        assert_eq!(coords[0], Dim3::new(0, 0, 0));
        assert_eq!(coords[1], Dim3::new(1, 0, 0));
        assert_eq!(coords[3], Dim3::new(0, 1, 0));
        assert_eq!(coords[6], Dim3::new(0, 0, 1));
        assert_eq!(coords[11], Dim3::new(2, 1, 1));
        for (i, c) in coords.iter().enumerate() {
            assert_eq!(d.flatten(*c), i as u32, "flatten undoes unflatten");
        }
    }
}
