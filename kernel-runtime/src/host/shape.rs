//! Shapes: the ranks device arrays have ([`Rank`]: 0-D to 3-D) and the shape arguments that make
//! them ([`ShapeArg`]: `n`, `(n, m)`, `(n, m, k)` or `()`, of any integer type, checked).

use super::error::Error;
use ndarray::{Dimension, Ix0, Ix1, Ix2, Ix3};

/// The shapes device arrays have: `Ix0`, `Ix1`, `Ix2`, `Ix3` (sealed).
pub trait Rank: Dimension + sealed::Sealed {}
impl Rank for Ix0 {}
impl Rank for Ix1 {}
impl Rank for Ix2 {}
impl Rank for Ix3 {}

/// The ranks with a first axis to slice and index: `Ix1`, `Ix2`, `Ix3` (sealed, as [`Rank`]).
pub trait Sliceable: Rank {
    /// The rank of one index of the first axis: `Ix0` of `Ix1`, `Ix1` of `Ix2`, `Ix2` of `Ix3`.
    type Sub: Rank;
    /// The shape of one index of the first axis.
    fn row_dim(&self) -> Self::Sub;
}
impl Sliceable for Ix1 {
    type Sub = Ix0;
    fn row_dim(&self) -> Ix0 {
        ndarray::Ix0()
    }
}
impl Sliceable for Ix2 {
    type Sub = Ix1;
    fn row_dim(&self) -> Ix1 {
        ndarray::Ix1(self[1])
    }
}
impl Sliceable for Ix3 {
    type Sub = Ix2;
    fn row_dim(&self) -> Ix2 {
        ndarray::Ix2(self[1], self[2])
    }
}

/// The extents of `dim` as a fixed-size array, for kernel views of rank `N`.
pub(crate) fn fixed_dims<D: Dimension, const N: usize>(dim: &D) -> [usize; N] {
    let mut dims = [0usize; N];
    dims.copy_from_slice(dim.slice());
    dims
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for ndarray::Ix0 {}
    impl Sealed for ndarray::Ix1 {}
    impl Sealed for ndarray::Ix2 {}
    impl Sealed for ndarray::Ix3 {}
}

/// A shape argument: `n`, `(n, m)`, `(n, m, k)` or `[n, m]`, of any integer type, checked.
pub trait ShapeArg {
    /// The rank it gives.
    type Dim: Rank;
    /// The shape, or why it is not one.
    fn into_shape(self) -> Result<Self::Dim, Error>;
}

/// One extent of a shape: any primitive integer, checked to be non-negative.
pub trait ShapeComponent: Copy {
    /// The extent as `usize`, or `None` when negative or too large.
    fn extent(self) -> Option<usize>;
    /// The value as given, for messages.
    fn shown(self) -> i128;
}
macro_rules! shape_component {
    ($($t:ty),*) => {$(
        impl ShapeComponent for $t {
            fn extent(self) -> Option<usize> {
                usize::try_from(self).ok()
            }
            fn shown(self) -> i128 {
                self as i128
            }
        }
    )*};
}
shape_component!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize);

/// The extents `raw` of a shape given as `shown`: a negative one is
/// [`Error::NegativeExtent`], one past `usize` [`Error::TooLarge`].
fn extents<const N: usize>(raw: [Option<usize>; N], shown: [i128; N]) -> Result<[usize; N], Error> {
    if let Some(&value) = shown.iter().find(|&&v| v < 0) {
        return Err(Error::NegativeExtent {
            shape: shown.to_vec(),
            value,
        });
    }
    let mut out = [0usize; N];
    for (o, r) in out.iter_mut().zip(raw) {
        *o = r.ok_or_else(|| Error::TooLarge {
            shape: shown
                .iter()
                .map(|&v| usize::try_from(v).unwrap_or(usize::MAX))
                .collect(),
        })?;
    }
    Ok(out)
}

impl<A: ShapeComponent> ShapeArg for A {
    type Dim = Ix1;
    fn into_shape(self) -> Result<Ix1, Error> {
        let [n] = extents([self.extent()], [self.shown()])?;
        Ok(ndarray::Ix1(n))
    }
}
/// `()`: the shape of a 0-D array, one value.
impl ShapeArg for () {
    type Dim = Ix0;
    fn into_shape(self) -> Result<Ix0, Error> {
        Ok(ndarray::Ix0())
    }
}
impl<A: ShapeComponent, B: ShapeComponent> ShapeArg for (A, B) {
    type Dim = Ix2;
    fn into_shape(self) -> Result<Ix2, Error> {
        let [n, m] = extents(
            [self.0.extent(), self.1.extent()],
            [self.0.shown(), self.1.shown()],
        )?;
        Ok(ndarray::Ix2(n, m))
    }
}
impl<A, B, C> ShapeArg for (A, B, C)
where
    A: ShapeComponent,
    B: ShapeComponent,
    C: ShapeComponent,
{
    type Dim = Ix3;
    fn into_shape(self) -> Result<Ix3, Error> {
        let [n, m, k] = extents(
            [self.0.extent(), self.1.extent(), self.2.extent()],
            [self.0.shown(), self.1.shown(), self.2.shown()],
        )?;
        Ok(ndarray::Ix3(n, m, k))
    }
}
