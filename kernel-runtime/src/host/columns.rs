//! Copies of a band of a 2-D array's columns (the same columns of every row) to and from
//! contiguous memory, row by row: what a halo exchange between blocks of a process grid sends
//! and receives. On a GPU they are strided copies (`cuMemcpy2D`), which move the band alone
//! rather than the array; where the host sees the array in place, they are slices of its view.

use std::ops::Range;

use ndarray::{s, ArrayView2, Ix1, Ix2};

use super::array::DeviceArray;
use super::cuda::{CudaDevice, Pitched};
use super::error::Error;
use super::host_vec::zeroed_vec;
use super::order::Access;
use crate::device_copy::DeviceCopy;

impl<T: DeviceCopy> DeviceArray<T, Ix2> {
    /// The columns `cols` of every row, row by row, in host memory.
    pub(crate) fn columns_to_vec(&self, cols: Range<usize>) -> Result<Vec<T>, Error> {
        self.band(&cols, None)?;
        if self.is_host_visible() {
            let view = self.host_view()?;
            return Ok(view.slice(s![.., cols]).iter().copied().collect());
        }
        let rows = self.dim().0;
        let mut out = zeroed_vec::<T>(rows * cols.len(), || "the host".into())?;
        let size = std::mem::size_of::<T>();
        let to = Pitched::Host(out.as_mut_ptr().cast(), cols.len() * size);
        let uses = [(self.span(), Access::Read)];
        // SAFETY: `band` checked the columns; `out` holds the band's elements.
        unsafe { self.copy_band(to, cols, false, &uses) }?;
        Ok(out)
    }

    /// Overwrites every row's `values.len() / rows` columns from `start` with `values`, row by
    /// row.
    pub(crate) fn columns_from_slice(&mut self, start: usize, values: &[T]) -> Result<(), Error> {
        let cols = start..start + values.len() / self.dim().0.max(1);
        self.band(&cols, Some(values.len()))?;
        if self.is_host_visible() {
            let from = ArrayView2::from_shape((self.dim().0, cols.len()), values)
                .map_err(|_| self.band_error(&cols, values.len()))?;
            self.host_view_mut()?.slice_mut(s![.., cols]).assign(&from);
            return Ok(());
        }
        let size = std::mem::size_of::<T>();
        let from = Pitched::Host(values.as_ptr().cast_mut().cast(), cols.len() * size);
        let uses = [(self.span(), Access::Write)];
        // SAFETY: `band` checked the columns and that `values` holds the band; a copy from the
        // host only reads it.
        unsafe { self.copy_band(from, cols, true, &uses) }
    }

    /// Copies the columns `cols` of every row, row by row, into `dst`, an array of this GPU
    /// with as many elements, on the GPU.
    pub(crate) fn columns_to_device(
        &self,
        cols: Range<usize>,
        dst: &mut DeviceArray<T, Ix1>,
    ) -> Result<(), Error> {
        self.band(&cols, Some(dst.len()))?;
        let to = self.contiguous(dst, cols.len())?;
        let uses = [(self.span(), Access::Read), (dst.span(), Access::Write)];
        // SAFETY: `band` checked the columns and that `dst` holds the band.
        unsafe { self.copy_band(to, cols, false, &uses) }
    }

    /// Overwrites every row's columns from `start` with `src`, an array of this GPU holding
    /// them row by row, on the GPU.
    pub(crate) fn columns_from_device(
        &mut self,
        start: usize,
        src: &DeviceArray<T, Ix1>,
    ) -> Result<(), Error> {
        let cols = start..start + src.len() / self.dim().0.max(1);
        self.band(&cols, Some(src.len()))?;
        let from = self.contiguous(src, cols.len())?;
        let uses = [(src.span(), Access::Read), (self.span(), Access::Write)];
        // SAFETY: `band` checked the columns and that `src` holds the band.
        unsafe { self.copy_band(from, cols, true, &uses) }
    }

    /// Copies the band `cols` from (`into`: to) this GPU array's memory to (from) `other`,
    /// contiguous, after the work the uses `uses` conflict with.
    ///
    /// # Safety
    /// The columns are the array's, and `other` holds the band's elements.
    unsafe fn copy_band(
        &self,
        other: Pitched,
        cols: Range<usize>,
        into: bool,
        uses: &[super::order::Use<'_>],
    ) -> Result<(), Error> {
        let (rows, width) = self.dim();
        let size = std::mem::size_of::<T>();
        let at = *self.device_addr() + (cols.start * size) as u64;
        let mine = Pitched::Device(at, width * size);
        let (dst, src) = if into { (mine, other) } else { (other, mine) };
        // SAFETY: the caller's contract; `mine` is the band's `rows` rows in the array.
        unsafe {
            self.gpu()?
                .copy_pitched(dst, src, (cols.len() * size, rows), uses)
        }
    }

    /// `other`, an array of this array's GPU holding a band `width` columns wide, as one side
    /// of a strided copy.
    fn contiguous(&self, other: &DeviceArray<T, Ix1>, width: usize) -> Result<Pitched, Error> {
        if other.device() != self.device() {
            return Err(Error::Mpi {
                message: format!(
                    "a band of columns moves between arrays of one GPU, not {} and {}",
                    self.device().name(),
                    other.device().name()
                ),
            });
        }
        let pitch = width * std::mem::size_of::<T>();
        Ok(Pitched::Device(*other.device_addr(), pitch))
    }

    /// This array's GPU.
    fn gpu(&self) -> Result<&CudaDevice, Error> {
        self.device().gpu().ok_or_else(|| Error::NotHostVisible {
            shape: self.shape().to_vec(),
        })
    }

    /// Checks that `cols` are columns of the array and, where given, that `elements` hold
    /// their band.
    fn band(&self, cols: &Range<usize>, elements: Option<usize>) -> Result<(), Error> {
        let (rows, width) = self.dim();
        let fits = cols.start <= cols.end && cols.end <= width;
        match elements {
            Some(n) if !fits || n != rows * cols.len() => Err(self.band_error(cols, n)),
            None if !fits => Err(self.band_error(cols, rows * cols.len())),
            _ => Ok(()),
        }
    }

    fn band_error(&self, cols: &Range<usize>, elements: usize) -> Error {
        Error::ShapeMismatch {
            what: format!("columns {cols:?} of every row of an array"),
            expected: vec![self.dim().0, cols.len()],
            found: vec![elements],
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{Device, Error};
    use ndarray::Array2;

    #[test]
    fn a_band_of_columns_goes_out_and_comes_back_row_by_row() {
        let dev = Device::cpu();
        let start = Array2::from_shape_fn((3, 5), |(i, j)| (10 * i + j) as i32);
        let mut a = dev.to_device(&start).unwrap();
        assert_eq!(a.columns_to_vec(1..3).unwrap(), [1, 2, 11, 12, 21, 22]);
        a.columns_from_slice(3, &[-1, -2, -3]).unwrap();
        let got = a.to_host().unwrap();
        assert_eq!(got.column(3).to_vec(), [-1, -2, -3]);
        assert_eq!(got.column(4), start.column(4));
    }

    #[test]
    fn bands_outside_the_array_or_of_the_wrong_size_are_refused() {
        let mut a = Device::cpu().zeros::<f32, _>((2, 4)).unwrap();
        let wrong = |r: Result<_, Error>| matches!(r, Err(Error::ShapeMismatch { .. }));
        assert!(wrong(a.columns_to_vec(3..5).map(drop)));
        assert!(wrong(a.columns_from_slice(3, &[1.0, 2.0, 3.0, 4.0])));
        assert!(wrong(a.columns_from_slice(0, &[1.0, 2.0, 3.0])));
    }
}
