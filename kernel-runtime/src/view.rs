//! Array views: how kernel parameters see device arrays.
//!
//! A kernel signature reads `&[T]`, `&mut [T]`, `&Array2<T>`, `&mut Array3<T>`, ...; the macro
//! lowers each such parameter to one of these views: a raw pointer with its shape, `Copy`,
//! indexable, never a Rust reference. A `&mut` parameter would tell the compiler that no other
//! thread touches the memory, which is false for a kernel: every thread receives the same
//! pointer. Indices are checked against the shape unless the kernel opts out
//! (`#[kernel(boundscheck = false)]`, the `CHECK = false` variants).

use core::marker::PhantomData;
use core::ops::{Index, IndexMut};

macro_rules! view_type {
    ($(#[$doc:meta])* $name:ident, $rank:literal, mutable = $mutable:tt) => {
        $(#[$doc])*
        ///
        /// The lifetime `'a` is the launch's: a view cannot be stored in a `static`, returned
        /// from the kernel or moved to another thread that may outlive it.
        pub struct $name<'a, T, const CHECK: bool = true> {
            ptr: *mut T,
            launch: PhantomData<&'a ()>,
            dims: [usize; $rank],
            // Unread by a read-only 0-D view, which has no index to check and no access to
            // record.
            #[cfg(not(target_arch = "nvptx64"))]
            #[allow(dead_code)]
            name: &'static str,
            #[cfg(not(target_arch = "nvptx64"))]
            #[allow(dead_code)]
            trace: crate::cpu::check::Trace,
        }

        impl<'a, T, const CHECK: bool> Clone for $name<'a, T, CHECK> {
            #[inline(always)]
            fn clone(&self) -> Self {
                *self
            }
        }
        impl<'a, T, const CHECK: bool> Copy for $name<'a, T, CHECK> {}

        // SAFETY: a view is a pointer into device memory that every thread of a launch shares,
        // as in CUDA; the kernel safety contract (no unsynchronised conflicting accesses)
        // makes sharing it sound.
        unsafe impl<'a, T: Sync, const CHECK: bool> Sync for $name<'a, T, CHECK> {}
        // SAFETY: as above.
        unsafe impl<'a, T: Send, const CHECK: bool> Send for $name<'a, T, CHECK> {}

        impl<'a, T, const CHECK: bool> $name<'a, T, CHECK> {
            /// A view of `dims` elements (C order) at `ptr`, for the lifetime `'a` the caller
            /// chooses.
            ///
            /// # Safety
            /// `ptr` must be valid for reads (and writes, for a mutable view) of the product of
            /// `dims` elements for as long as `'a` lasts: tie `'a` to what owns the memory with
            /// [`within`](Self::within).
            #[doc(hidden)]
            #[inline(always)]
            pub unsafe fn from_raw(ptr: *mut T, dims: [usize; $rank], name: &'static str) -> Self {
                #[cfg(target_arch = "nvptx64")]
                let _ = name;
                $name {
                    ptr,
                    launch: PhantomData,
                    dims,
                    #[cfg(not(target_arch = "nvptx64"))]
                    name,
                    #[cfg(not(target_arch = "nvptx64"))]
                    trace: crate::cpu::check::Trace::OFF,
                }
            }
            /// [`from_raw`](Self::from_raw), tied to `launch` with [`within`](Self::within): how a
            /// kernel's PTX entry views its array parameters.
            ///
            /// # Safety
            /// As [`from_raw`](Self::from_raw), for as long as `launch` stays borrowed.
            #[doc(hidden)]
            #[inline(always)]
            pub unsafe fn at<'l, O: ?Sized>(
                ptr: *mut T,
                dims: [usize; $rank],
                name: &'static str,
                launch: &'l O,
            ) -> $name<'l, T, CHECK> {
                // SAFETY: the caller's contract.
                unsafe { $name::<'l, T, CHECK>::from_raw(ptr, dims, name) }.within(launch)
            }
            /// The same view, living no longer than `_owner` stays borrowed: how a view made by
            /// [`from_raw`](Self::from_raw) is tied to the array (or launch) it belongs to.
            #[doc(hidden)]
            #[inline(always)]
            pub fn within<'b, O: ?Sized>(self, _owner: &'b O) -> $name<'b, T, CHECK>
            where
                'a: 'b,
            {
                self
            }
            /// The same view, its accesses checked through `trace` (checked mode of the CPU
            /// backend).
            ///
            /// # Safety
            /// A trace that is on must point at a shadow that covers the view and outlives it.
            #[cfg(not(target_arch = "nvptx64"))]
            #[inline(always)]
            pub(crate) unsafe fn traced(self, trace: crate::cpu::check::Trace) -> Self {
                $name { trace, ..self }
            }
            /// Whether every index is checked: by the kernel's choice, or in checked mode.
            #[inline(always)]
            #[allow(dead_code)] // unused by 0-D views, which have no index to check
            fn checks(&self) -> bool {
                #[cfg(not(target_arch = "nvptx64"))]
                {
                    CHECK || self.trace.on()
                }
                #[cfg(target_arch = "nvptx64")]
                {
                    CHECK
                }
            }
            /// Reports an index outside the shape. Takes the name, index and shape by value, in
            /// registers: neither the view's address nor a copy of it in memory then escapes
            /// the thread loop, where the view stays in registers and its extents stay the
            /// values the loop's bounds compare with (a copy in memory, whose address the call
            /// took, would be read back after every store, and an index checked against one
            /// array no longer proven in range for another of the same shape). On the GPU it
            /// is a `trap` in place, so that a kernel with index checks has no call in it (and
            /// no call sequence around its checks).
            #[cold]
            #[cfg_attr(not(target_arch = "nvptx64"), inline(never))]
            #[cfg_attr(target_arch = "nvptx64", inline(always))]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            #[allow(dead_code)] // unused by 0-D views, which have no index to check
            fn out_of_bounds(
                name: &'static str,
                index: [usize; $rank],
                dims: [usize; $rank],
                kind: crate::fault::AccessKind,
            ) -> ! {
                crate::fault::out_of_bounds(name, &index, &dims, kind)
            }
            /// The number of elements.
            #[inline(always)]
            pub fn len(&self) -> usize {
                self.dims.iter().product()
            }
            /// Whether the view has no elements.
            #[inline(always)]
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }
            /// The shape, outermost dimension first.
            #[inline(always)]
            pub fn shape(&self) -> [usize; $rank] {
                self.dims
            }
            /// A pointer to the first element.
            #[inline(always)]
            pub fn as_ptr(&self) -> *const T {
                self.ptr
            }
            #[inline(always)]
            #[allow(dead_code)] // unused by 0-D views, which have no index to check
            pub(crate) fn name(&self) -> &'static str {
                #[cfg(not(target_arch = "nvptx64"))]
                {
                    self.name
                }
                #[cfg(target_arch = "nvptx64")]
                {
                    ""
                }
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        impl<'a, T: Send + Sync, const CHECK: bool> crate::cpu::launch::shapes::LaunchView for $name<'a, T, CHECK> {
            #[inline(always)]
            fn note(&self, shapes: &mut crate::cpu::launch::shapes::Shapes, grid: bool) {
                if crate::cpu::launch::shapes::shares(CHECK, grid, $rank) {
                    shapes.note(self.dims);
                }
            }
            #[inline(always)]
            fn untraced(self) -> Self {
                $name {
                    trace: crate::cpu::check::Trace::OFF,
                    ..self
                }
            }
            #[inline(always)]
            fn named(self, block: u32, thread: u32) -> Self {
                $name {
                    trace: self.trace.named(block, thread),
                    ..self
                }
            }
            #[inline(always)]
            unsafe fn fast<const GRID: bool>(self, common: &crate::cpu::launch::shapes::Common) -> Self {
                let dims = if crate::cpu::launch::shapes::shares(CHECK, GRID, $rank) {
                    debug_assert!(common.of::<$rank>() == self.dims);
                    common.of::<$rank>()
                } else {
                    self.dims
                };
                $name {
                    dims,
                    trace: crate::cpu::check::Trace::OFF,
                    ..self
                }
            }
            #[inline(always)]
            fn tests_unwritten(&self) -> bool {
                self.trace.tests_unwritten()
            }
        }
        view_type!(@mutable $name, $rank, $mutable);
    };
    (@mutable $name:ident, $rank:tt, true) => {
        impl<'a, T, const CHECK: bool> $name<'a, T, CHECK> {
            /// Records the access to element `o` in checked mode.
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn record(&self, o: usize, kind: crate::fault::AccessKind) {
                #[cfg(not(target_arch = "nvptx64"))]
                if self.trace.on() && crate::cpu::check::record(&self.trace, o, kind) {
                    // Copies, so that the view's address never escapes the kernel's loop.
                    let (trace, dims) = (self.trace, self.dims);
                    crate::cpu::check::report(trace, kind, self.name, &dims)
                }
                #[cfg(target_arch = "nvptx64")]
                let _ = (o, kind);
            }
            /// A mutable pointer to the first element.
            #[inline(always)]
            pub fn as_mut_ptr(&self) -> *mut T {
                self.ptr
            }
            /// The view as checked mode's span records take it (`#[kernel]` writes the calls).
            #[doc(hidden)]
            #[cfg(not(target_arch = "nvptx64"))]
            #[inline(always)]
            pub fn __traced(&self) -> crate::cpu::check::Traced<$rank> {
                crate::cpu::check::Traced::new(self.trace, self.dims, self.name)
            }
        }
    };
    (@mutable $name:ident, $rank:tt, false) => {
        impl<'a, T, const CHECK: bool> $name<'a, T, CHECK> {
            /// Read-only arrays need no records, as no thread of the launch writes them; in
            /// checked mode, a read of element `o` that nothing has written stops the kernel.
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn record(&self, o: usize, _kind: crate::fault::AccessKind) {
                #[cfg(not(target_arch = "nvptx64"))]
                if self.trace.tests_unwritten() {
                    // Copies, so that the view's address never escapes the kernel's loop.
                    let (trace, dims) = (self.trace, self.dims);
                    crate::cpu::check::read_unwritten(trace, o, self.name, &dims)
                }
                #[cfg(target_arch = "nvptx64")]
                let _ = o;
            }
        }
    };
}

view_type!(
    /// A read-only 0-D view, one value: what `&Array0<T>` kernel parameters become.
    View0, 0, mutable = false
);
view_type!(
    /// A writable 0-D view, one value: what `&mut Array0<T>` kernel parameters become
    /// (`out[()] = v`, `atomic_add(&out, (), v)`).
    View0Mut, 0, mutable = true
);
view_type!(
    /// A read-only 1-D view: what `&[T]` and `&Array1<T>` kernel parameters become.
    View1, 1, mutable = false
);
view_type!(
    /// A writable 1-D view: what `&mut [T]` and `&mut Array1<T>` kernel parameters become.
    View1Mut, 1, mutable = true
);
view_type!(
    /// A read-only 2-D view (C order): what `&Array2<T>` kernel parameters become.
    View2, 2, mutable = false
);
view_type!(
    /// A writable 2-D view (C order): what `&mut Array2<T>` kernel parameters become.
    View2Mut, 2, mutable = true
);
view_type!(
    /// A read-only 3-D view (C order): what `&Array3<T>` kernel parameters become.
    View3, 3, mutable = false
);
view_type!(
    /// A writable 3-D view (C order): what `&mut Array3<T>` kernel parameters become.
    View3Mut, 3, mutable = true
);

/// `row(i)`, ndarray's name for a 2-D view's `subarray(i)`.
macro_rules! rows {
    ($name:ident => $row:ident) => {
        impl<'a, T, const CHECK: bool> $name<'a, T, CHECK> {
            /// Row `i`, as ndarray's `row(i)`: the same as [`subarray`](Self::subarray).
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            pub fn row(self, i: impl ArrayIndex) -> $row<'a, T, CHECK> {
                self.subarray(i)
            }
        }
    };
}
macro_rules! rank0 {
    ($name:ident) => {
        impl<'a, T, const CHECK: bool> $name<'a, T, CHECK> {
            /// The shape `()`, as ndarray's `dim()` of a 0-D array.
            #[inline(always)]
            pub fn dim(&self) {}
            /// The one element's offset: a 0-D array always has it.
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn offset(&self, kind: crate::fault::AccessKind) -> usize {
                self.record(0, kind);
                0
            }
        }
        impl<'a, T, const CHECK: bool> Index<()> for $name<'a, T, CHECK> {
            type Output = T;
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn index(&self, (): ()) -> &T {
                let o = self.offset(crate::fault::AccessKind::Read);
                // SAFETY: a 0-D view covers one element (per `from_raw`), at offset 0.
                unsafe { &*self.ptr.add(o) }
            }
        }
    };
}
macro_rules! rank1 {
    ($name:ident => $rows:ident) => {
        impl<'a, T, const CHECK: bool> $name<'a, T, CHECK> {
            /// The length, as ndarray's `dim()` of a 1-D array.
            #[inline(always)]
            pub fn dim(&self) -> usize {
                self.dims[0]
            }
            /// The elements as a 2-D array of rows of `cols`, C order (those past the last whole
            /// row left out): how a kernel lays a 2-D array over dynamic shared memory,
            /// `dynamic_shared![f16].slice(0..n).rows(40)`. Rows of no element stop the kernel
            /// (a trap on a GPU).
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            pub fn rows(self, cols: usize) -> $rows<'a, T, CHECK> {
                assert!(cols > 0, "rows(0): a row holds at least one element");
                $rows {
                    ptr: self.ptr,
                    launch: self.launch,
                    dims: [self.dims[0] / cols, cols],
                    #[cfg(not(target_arch = "nvptx64"))]
                    name: self.name,
                    #[cfg(not(target_arch = "nvptx64"))]
                    trace: self.trace,
                }
            }
            /// Whether index `i` lies within the view.
            #[inline(always)]
            fn holds(&self, i: usize) -> bool {
                i < self.dims[0]
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn offset(&self, i: usize, kind: crate::fault::AccessKind) -> usize {
                if self.checks() && !self.holds(i) {
                    Self::out_of_bounds(self.name(), [i], self.dims, kind)
                }
                self.record(i, kind);
                i
            }
        }
        impl<'a, T, I: ArrayIndex, const CHECK: bool> Index<I> for $name<'a, T, CHECK> {
            type Output = T;
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn index(&self, i: I) -> &T {
                let o = self.offset(i.index(), crate::fault::AccessKind::Read);
                // SAFETY: `o` is within the view (checked, or promised by the kernel's author
                // with `boundscheck = false`); the memory is valid per `from_raw`.
                unsafe { &*self.ptr.add(o) }
            }
        }
    };
}
macro_rules! rank2 {
    ($name:ident) => {
        impl<'a, T, const CHECK: bool> $name<'a, T, CHECK> {
            /// The shape `(rows, columns)`, as ndarray's `dim()`.
            #[inline(always)]
            pub fn dim(&self) -> (usize, usize) {
                (self.dims[0], self.dims[1])
            }
            /// Whether index `[i, j]` lies within the view.
            #[inline(always)]
            fn holds(&self, i: usize, j: usize) -> bool {
                i < self.dims[0] && j < self.dims[1]
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn offset(&self, i: usize, j: usize, kind: crate::fault::AccessKind) -> usize {
                if self.checks() && !self.holds(i, j) {
                    Self::out_of_bounds(self.name(), [i, j], self.dims, kind)
                }
                let o = i * self.dims[1] + j;
                self.record(o, kind);
                o
            }
        }
        impl<'a, T, const CHECK: bool> Index<[usize; 2]> for $name<'a, T, CHECK> {
            type Output = T;
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn index(&self, [i, j]: [usize; 2]) -> &T {
                let o = self.offset(i, j, crate::fault::AccessKind::Read);
                // SAFETY: `o` is within the view (checked, or promised with
                // `boundscheck = false`); the memory is valid per `from_raw`.
                unsafe { &*self.ptr.add(o) }
            }
        }
        impl<'a, T, const CHECK: bool> Index<(usize, usize)> for $name<'a, T, CHECK> {
            type Output = T;
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn index(&self, (i, j): (usize, usize)) -> &T {
                &self[[i, j]]
            }
        }
    };
}
macro_rules! rank3 {
    ($name:ident) => {
        impl<'a, T, const CHECK: bool> $name<'a, T, CHECK> {
            /// The shape `(d0, d1, d2)`, as ndarray's `dim()`.
            #[inline(always)]
            pub fn dim(&self) -> (usize, usize, usize) {
                (self.dims[0], self.dims[1], self.dims[2])
            }
            /// Whether index `[i, j, k]` lies within the view.
            #[inline(always)]
            fn holds(&self, i: usize, j: usize, k: usize) -> bool {
                i < self.dims[0] && j < self.dims[1] && k < self.dims[2]
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn offset(
                &self,
                i: usize,
                j: usize,
                k: usize,
                kind: crate::fault::AccessKind,
            ) -> usize {
                if self.checks() && !self.holds(i, j, k) {
                    Self::out_of_bounds(self.name(), [i, j, k], self.dims, kind)
                }
                let o = (i * self.dims[1] + j) * self.dims[2] + k;
                self.record(o, kind);
                o
            }
        }
        impl<'a, T, const CHECK: bool> Index<[usize; 3]> for $name<'a, T, CHECK> {
            type Output = T;
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn index(&self, [i, j, k]: [usize; 3]) -> &T {
                let o = self.offset(i, j, k, crate::fault::AccessKind::Read);
                // SAFETY: `o` is within the view (checked, or promised with
                // `boundscheck = false`); the memory is valid per `from_raw`.
                unsafe { &*self.ptr.add(o) }
            }
        }
        impl<'a, T, const CHECK: bool> Index<(usize, usize, usize)> for $name<'a, T, CHECK> {
            type Output = T;
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn index(&self, (i, j, k): (usize, usize, usize)) -> &T {
                &self[[i, j, k]]
            }
        }
    };
}
/// The elements of a 1-D kernel array in order, as `&T`: `x.iter()` and `for v in x`, as Numba's
/// `for v in x:` in a kernel. Each read is the view's own (`x[i]`), so checked mode sees it.
///
/// ```
/// use kernel_runtime::prelude::*;
///
/// #[kernel]
/// fn row_totals(x: &Array2<f32>, out: &mut [f32]) {
///     let i = grid(1);
///     if i < out.len() {
///         out[i] = x.row(i).iter().sum();
///     }
/// }
/// # let dev = Device::cpu();
/// # let x = dev.to_device(&kernel_runtime::ndarray::Array2::from_elem((3, 4), 0.5f32))?;
/// # let mut out = dev.zeros::<f32, _>(3)?;
/// # row_totals.launch(1, 32, (&x, &mut out))?;
/// # assert_eq!(out.to_vec()?, [2.0; 3]);
/// # Ok::<(), kernel_runtime::Error>(())
/// ```
#[derive(Clone, Copy)]
pub struct Iter<V> {
    view: V,
    front: usize,
    back: usize,
}

/// `iter()` and `IntoIterator` for a 1-D array type `$ty` of `'a`, `T` and `CHECK`, whose
/// `read(i)` is its element `i` (checked and recorded as `x[i]` is) for `'a`.
macro_rules! iterable {
    ($ty:ty) => {
        impl<'a, T, const CHECK: bool> $ty {
            /// The elements in order, as `&T` (see [`Iter`]).
            #[inline(always)]
            pub fn iter(&self) -> Iter<Self> {
                Iter {
                    view: *self,
                    front: 0,
                    back: self.len(),
                }
            }
        }
        impl<'a, T: 'a, const CHECK: bool> IntoIterator for $ty {
            type Item = &'a T;
            type IntoIter = Iter<Self>;
            #[inline(always)]
            fn into_iter(self) -> Iter<Self> {
                self.iter()
            }
        }
        impl<'a, T: 'a, const CHECK: bool> Iterator for Iter<$ty> {
            type Item = &'a T;
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn next(&mut self) -> Option<&'a T> {
                if self.front == self.back {
                    return None;
                }
                self.front += 1;
                Some(self.view.read(self.front - 1))
            }
            #[inline(always)]
            fn size_hint(&self) -> (usize, Option<usize>) {
                let n = self.back - self.front;
                (n, Some(n))
            }
        }
        impl<'a, T: 'a, const CHECK: bool> DoubleEndedIterator for Iter<$ty> {
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn next_back(&mut self) -> Option<&'a T> {
                if self.front == self.back {
                    return None;
                }
                self.back -= 1;
                Some(self.view.read(self.back))
            }
        }
        impl<'a, T: 'a, const CHECK: bool> ExactSizeIterator for Iter<$ty> {}
    };
}

/// `read(i)` of a 1-D view: element `i`, for the view's lifetime.
macro_rules! readable {
    ($name:ident) => {
        impl<'a, T, const CHECK: bool> $name<'a, T, CHECK> {
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn read(&self, i: usize) -> &'a T {
                let o = self.offset(i, crate::fault::AccessKind::Read);
                // SAFETY: `o` is within the view, whose memory is valid for `'a` (`from_raw`).
                unsafe { &*self.ptr.add(o) }
            }
        }
    };
}
readable!(View1);
readable!(View1Mut);
iterable!(View1<'a, T, CHECK>);
iterable!(View1Mut<'a, T, CHECK>);

/// Column `j` of a 2-D kernel array: `x.column(j)[i]` is `x[[i, j]]`, Numba's `x[:, j]` in a
/// kernel, and `x.column(j).iter()` walks it. Its elements lie a row apart, so it is an array
/// of the 2-D one's elements, not a contiguous view: each access is the 2-D array's own,
/// checked against its shape, and checked mode reports it at `x[[i, j]]`.
///
/// ```
/// use kernel_runtime::prelude::*;
///
/// #[kernel]
/// fn column_maxima(x: &Array2<u32>, out: &mut [u32]) {
///     let j = grid(1);
///     if j < out.len() {
///         out[j] = x.column(j).iter().copied().max().unwrap_or(0);
///     }
/// }
/// # let dev = Device::cpu();
/// # let x = dev.to_device(&kernel_runtime::ndarray::array![[1u32, 9], [7, 2], [3, 4]])?;
/// # let mut out = dev.zeros::<u32, _>(2)?;
/// # column_maxima.launch(1, 32, (&x, &mut out))?;
/// # assert_eq!(out.to_vec()?, [7, 9]);
/// # Ok::<(), kernel_runtime::Error>(())
/// ```
#[derive(Clone, Copy)]
pub struct Column<V> {
    view: V,
    j: usize,
}

/// `column(j)` of a 2-D view type, and its column's length, indexing and reads.
macro_rules! columns {
    ($name:ident) => {
        impl<'a, T, const CHECK: bool> $name<'a, T, CHECK> {
            /// Column `j`, Numba's `x[:, j]` (see [`Column`]). A `j` outside the view stops the
            /// kernel, whatever its index checks (a trap on a GPU).
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            pub fn column(self, j: impl ArrayIndex) -> Column<Self> {
                let j = j.index();
                if j >= self.dims[1] {
                    crate::fault::bad_part("column", self.name(), j, self.dims[1], "columns")
                }
                Column { view: self, j }
            }
        }
        impl<'a, T, const CHECK: bool> Column<$name<'a, T, CHECK>> {
            /// The number of elements: the array's rows.
            #[inline(always)]
            pub fn len(&self) -> usize {
                self.view.dims[0]
            }
            /// Whether the column has no elements.
            #[inline(always)]
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }
            /// The length, as ndarray's `dim()` of a 1-D array.
            #[inline(always)]
            pub fn dim(&self) -> usize {
                self.len()
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn read(&self, i: usize) -> &'a T {
                let o = self.view.offset(i, self.j, crate::fault::AccessKind::Read);
                // SAFETY: `o` is within the 2-D view, valid for `'a` (`from_raw`).
                unsafe { &*self.view.ptr.add(o) }
            }
        }
        impl<'a, T, I: ArrayIndex, const CHECK: bool> Index<I> for Column<$name<'a, T, CHECK>> {
            type Output = T;
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn index(&self, i: I) -> &T {
                self.read(i.index())
            }
        }
        iterable!(Column<$name<'a, T, CHECK>>);
    };
}
columns!(View2);
columns!(View2Mut);
impl<'a, T, I: ArrayIndex, const CHECK: bool> IndexMut<I> for Column<View2Mut<'a, T, CHECK>> {
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn index_mut(&mut self, i: I) -> &mut T {
        &mut self.view[[i.index(), self.j]]
    }
}

/// An index into a 1-D kernel array (`x[i]`): a `usize`, as `grid(1)` gives, or a `u32`, as
/// `thread_idx().x` and the other coordinates are, so that CUDA's `x[threadIdx.x]` reads
/// `x[thread_idx().x]` with no cast; and an `i32`, which is what an integer literal of no other
/// type is (`x[0]`). A negative `i32` is out of bounds.
///
/// ```
/// use kernel_runtime::prelude::*;
///
/// #[kernel]
/// fn first_of_each_block(x: &[f32], out: &mut [f32]) {
///     if thread_idx().x == 0 {
///         out[block_idx().x] = x[block_idx().x * block_dim().x];
///     }
///     let mut s = shared_array![f32; 32];
///     s[thread_idx().x] = x[0];
/// }
/// # let dev = Device::cpu();
/// # let x = dev.to_device(&(0..64).map(|v| v as f32).collect::<Vec<_>>())?;
/// # let mut out = dev.zeros::<f32, _>(2)?;
/// # first_of_each_block.launch(2, 32, (&x, &mut out))?;
/// # assert_eq!(out.to_vec()?, [0.0, 32.0]);
/// # Ok::<(), kernel_runtime::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "a kernel array cannot be indexed by `{Self}`",
    label = "not a `usize` or `u32` index",
    note = "index with a `usize` (`grid(1)` gives one) or a `u32` (`thread_idx().x`); convert \
            others with `as usize`"
)]
pub trait ArrayIndex: Copy {
    /// The index as a `usize`.
    fn index(self) -> usize;
}

impl ArrayIndex for usize {
    #[inline(always)]
    fn index(self) -> usize {
        self
    }
}

impl ArrayIndex for u32 {
    #[inline(always)]
    fn index(self) -> usize {
        self as usize
    }
}

impl ArrayIndex for i32 {
    /// A negative index becomes one past any array's end, which the bounds check refuses.
    #[inline(always)]
    fn index(self) -> usize {
        self as isize as usize
    }
}

/// Only the views implement [`ElementPtr`]: the atomics write through the pointer it gives and
/// trust its `block_private`, so a type of a user's could make them reach any address.
mod element_ptr {
    pub trait Sealed<I> {}
}

/// Views whose elements can be addressed for atomics: writable views and shared arrays.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be updated atomically at an index of type `{I}`",
    label = "atomics need a writable array",
    note = "declare the kernel parameter `&mut [T]` (or `&mut Array2<T>`, ...) to update it, or use a shared array; indices are `usize`, `[usize; N]` for N-D arrays, `()` for a 0-D one"
)]
pub trait ElementPtr<I>: element_ptr::Sealed<I> {
    /// The element type.
    type Elem;
    /// A checked pointer to the element at `index`.
    fn element_ptr(&self, index: I) -> *mut Self::Elem;
    /// Whether the array is in the block's shared memory on the fast CPU backend, where only
    /// the block's threads access it, one after another on one OS thread: its atomics may then
    /// be plain updates.
    #[doc(hidden)]
    #[inline(always)]
    fn block_private(&self) -> bool {
        false
    }
}

/// `IndexMut` (a write) and [`ElementPtr`] (an atomic) for a writable view, at the offset of
/// the index's components.
macro_rules! writable {
    ($name:ident, $idx:ty, |$pat:pat_param| ($($arg:ident),*)) => {
        writable!(@index_mut $name, $idx, |$pat| ($($arg),*));
        writable!(@element_ptr $name, $idx, |$pat| ($($arg),*));
    };
    (@index_mut $name:ident, $idx:ty, |$pat:pat_param| ($($arg:ident),*)) => {
        impl<'a, T, const CHECK: bool> IndexMut<$idx> for $name<'a, T, CHECK> {
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn index_mut(&mut self, $pat: $idx) -> &mut T {
                let o = self.offset($($arg,)* crate::fault::AccessKind::Write);
                // SAFETY: `o` is within the view (checked, or promised with
                // `boundscheck = false`); the memory is valid for writes per `from_raw`; no
                // other thread accesses the element concurrently (kernel safety contract).
                unsafe { &mut *self.ptr.add(o) }
            }
        }
    };
    (@element_ptr $name:ident, $idx:ty, |$pat:pat_param| ($($arg:ident),*)) => {
        impl<'a, T, const CHECK: bool> element_ptr::Sealed<$idx> for $name<'a, T, CHECK> {}
        impl<'a, T, const CHECK: bool> ElementPtr<$idx> for $name<'a, T, CHECK> {
            type Elem = T;
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn element_ptr(&self, $pat: $idx) -> *mut T {
                let o = self.offset($($arg,)* crate::fault::AccessKind::Atomic);
                // SAFETY: `o` is within the view (see `IndexMut`).
                unsafe { self.ptr.add(o) }
            }
            #[inline(always)]
            fn block_private(&self) -> bool {
                #[cfg(not(target_arch = "nvptx64"))]
                {
                    self.trace.block_private()
                }
                #[cfg(target_arch = "nvptx64")]
                {
                    false
                }
            }
        }
    };
}

/// `slice` along the first axis of a view whose entries there are `$unit`, and, given the view
/// type of one entry, `subarray`: Numba's `x[i:j]` and `x[i]` in a kernel. The parts lie in the
/// view's memory, C order keeping each entry's elements together, so they are views too.
macro_rules! first_axis {
    ($name:ident, $unit:literal) => {
        impl<'a, T, const CHECK: bool> $name<'a, T, CHECK> {
            /// The elements of one entry of the first axis.
            #[inline(always)]
            fn entry_len(&self) -> usize {
                self.dims[1..].iter().product()
            }
            #[doc = concat!("The ", $unit, " `range` of the first axis as an array of their own, indexed from 0:")]
            /// Numba's `a[i:j]` in a kernel (`a.slice(i..)`, `a.slice(..j)` as `a[i:]`,
            /// `a[:j]`). `dynamic_shared![f32].slice(0..n)` and `.slice(n..2 * n)` carve one
            /// dynamic shared allocation into two arrays, as Numba's `dyn[0:n]` and `dyn[n:2*n]`
            /// do. A range outside the view stops the kernel, whatever its index checks (a trap
            /// on a GPU).
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            pub fn slice(self, range: impl core::ops::RangeBounds<usize>) -> Self {
                let (start, end) = crate::base::range_ends(&range, self.dims[0]);
                if start > end || end > self.dims[0] {
                    crate::fault::bad_slice(self.name(), start, end, self.dims[0], $unit)
                }
                let skip = start * self.entry_len();
                let mut dims = self.dims;
                dims[0] = end - start;
                $name {
                    // In the view's memory: `start <= end <= dims[0]` (checked above).
                    ptr: self.ptr.wrapping_add(skip),
                    dims,
                    #[cfg(not(target_arch = "nvptx64"))]
                    trace: self.trace.skip(skip),
                    ..self
                }
            }
        }
    };
    ($name:ident, $unit:literal => $sub:ident, $subrank:literal) => {
        first_axis!($name, $unit);
        impl<'a, T, const CHECK: bool> $name<'a, T, CHECK> {
            /// Entry `i` of the first axis, an array of one rank less indexed from 0: Numba's
            /// `a[i]` (`a[i, :]`) in a kernel. An `i` outside the view stops the kernel,
            /// whatever its index checks (a trap on a GPU).
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            pub fn subarray(self, i: impl ArrayIndex) -> $sub<'a, T, CHECK> {
                let i = i.index();
                if i >= self.dims[0] {
                    crate::fault::bad_part("subarray", self.name(), i, self.dims[0], $unit)
                }
                let skip = i * self.entry_len();
                let mut dims = [0; $subrank];
                dims.copy_from_slice(&self.dims[1..]);
                $sub {
                    // In the view's memory: `i < dims[0]` (checked above).
                    ptr: self.ptr.wrapping_add(skip),
                    launch: self.launch,
                    dims,
                    #[cfg(not(target_arch = "nvptx64"))]
                    name: self.name,
                    #[cfg(not(target_arch = "nvptx64"))]
                    trace: self.trace.skip(skip),
                }
            }
        }
    };
}

rank0!(View0);
rank0!(View0Mut);
rank1!(View1 => View2);
rank1!(View1Mut => View2Mut);
rank2!(View2);
rank2!(View2Mut);
rank3!(View3);
rank3!(View3Mut);
first_axis!(View1, "elements");
first_axis!(View1Mut, "elements");
first_axis!(View2, "rows" => View1, 1);
first_axis!(View2Mut, "rows" => View1Mut, 1);
first_axis!(View3, "planes" => View2, 2);
first_axis!(View3Mut, "planes" => View2Mut, 2);
rows!(View2 => View1);
rows!(View2Mut => View1Mut);
writable!(View0Mut, (), |()| ());
// A 1-D view is written at any [`ArrayIndex`]; its atomics take a `usize`.
impl<'a, T, I: ArrayIndex, const CHECK: bool> IndexMut<I> for View1Mut<'a, T, CHECK> {
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn index_mut(&mut self, i: I) -> &mut T {
        let o = self.offset(i.index(), crate::fault::AccessKind::Write);
        // SAFETY: as `writable!`'s `IndexMut`: `o` is within the view, valid for writes, and no
        // other thread accesses the element concurrently (kernel safety contract).
        unsafe { &mut *self.ptr.add(o) }
    }
}
writable!(@element_ptr View1Mut, usize, |i| (i));
writable!(View2Mut, [usize; 2], |[i, j]| (i, j));
writable!(View2Mut, (usize, usize), |(i, j)| (i, j));
writable!(View3Mut, [usize; 3], |[i, j, k]| (i, j, k));
writable!(View3Mut, (usize, usize, usize), |(i, j, k)| (i, j, k));

/// An index that the CPU backend's rows checked once for a whole span of threads (the
/// `#[kernel]` macro's proofs of a guarded grid-level kernel): where `proven`, the view does not
/// check it again. Generated code makes one; a kernel never names it.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct Proven<I> {
    index: I,
    proven: bool,
}

impl<I> Proven<I> {
    /// `index`, within the view it indexes where `proven`.
    ///
    /// # Safety
    /// Where `proven` is true, `index` must be within the shape of the view it indexes.
    #[inline(always)]
    pub unsafe fn new(index: I, proven: bool) -> Self {
        Proven { index, proven }
    }
}

/// `Index` and `IndexMut` of a view at a [`Proven`] index: its own at the plain index, told
/// that the index is within the view (the test its check makes) where it is proven, so
/// that the check folds away. `|pattern| (args)` takes the index apart as `writable!` does.
macro_rules! proven {
    ($name:ident, $idx:ty, |$pat:pat_param| ($($arg:expr),*)) => {
        impl<'a, T, const CHECK: bool> Index<Proven<$idx>> for $name<'a, T, CHECK> {
            type Output = T;
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn index(&self, p: Proven<$idx>) -> &T {
                if p.proven {
                    let $pat = p.index;
                    // SAFETY: a proven index is within the view (`Proven::new`).
                    unsafe { core::hint::assert_unchecked(self.holds($($arg),*)) }
                }
                &self[p.index]
            }
        }
    };
    (mut $name:ident, $idx:ty, |$pat:pat_param| ($($arg:expr),*)) => {
        proven!($name, $idx, |$pat| ($($arg),*));
        impl<'a, T, const CHECK: bool> IndexMut<Proven<$idx>> for $name<'a, T, CHECK> {
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn index_mut(&mut self, p: Proven<$idx>) -> &mut T {
                if p.proven {
                    let $pat = p.index;
                    // SAFETY: as in `Index`.
                    unsafe { core::hint::assert_unchecked(self.holds($($arg),*)) }
                }
                &mut self[p.index]
            }
        }
    };
}

proven!(View1, usize, |i| (i));
proven!(View1, u32, |i| (i.index()));
proven!(View1, i32, |i| (i.index()));
proven!(mut View1Mut, usize, |i| (i));
proven!(mut View1Mut, u32, |i| (i.index()));
proven!(mut View1Mut, i32, |i| (i.index()));
proven!(View2, [usize; 2], |[i, j]| (i, j));
proven!(View2, (usize, usize), |(i, j)| (i, j));
proven!(mut View2Mut, [usize; 2], |[i, j]| (i, j));
proven!(mut View2Mut, (usize, usize), |(i, j)| (i, j));
proven!(View3, [usize; 3], |[i, j, k]| (i, j, k));
proven!(View3, (usize, usize, usize), |(i, j, k)| (i, j, k));
proven!(mut View3Mut, [usize; 3], |[i, j, k]| (i, j, k));
proven!(mut View3Mut, (usize, usize, usize), |(i, j, k)| (i, j, k));

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::*;

    #[test]
    fn index_2d_is_row_major() {
        let mut data: Vec<i32> = (0..12).collect();
        // SAFETY: the view covers `data`, which outlives it.
        let v: View2Mut<i32> = unsafe { View2Mut::from_raw(data.as_mut_ptr(), [3, 4], "d") };
        assert_eq!(v[[1, 2]], 6);
        assert_eq!(v[(2, 3)], 11);
        assert_eq!(v.dim(), (3, 4));
        let mut w = v;
        w[[0, 0]] = 42;
        assert_eq!(data[0], 42);
    }

    /// Whether reading `v[index]` stops on a bad index.
    fn refused<V: Index<I>, I>(v: &V, index: I) -> bool {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = &v[index];
        }))
        .is_err()
    }

    #[test]
    fn every_axis_is_checked_at_its_extent() {
        let mut data = vec![0i32; 24];
        // SAFETY: the view covers the 24 elements of `data`, which outlives it; the views
        // below only read, or write out of bounds, which is refused before any access.
        let v1: View1<i32> = unsafe { View1::from_raw(data.as_mut_ptr(), [24], "d") };
        // SAFETY: 6 × 4 elements, as above.
        let v2: View2<i32> = unsafe { View2::from_raw(data.as_mut_ptr(), [6, 4], "d") };
        // SAFETY: 2 × 3 × 4 elements, as above.
        let v3: View3Mut<i32> = unsafe { View3Mut::from_raw(data.as_mut_ptr(), [2, 3, 4], "d") };
        assert!(!refused(&v1, 23) && refused(&v1, 24));
        assert!(!refused(&v2, [5, 3]) && !refused(&v2, (5, 3)));
        for bad in [[6, 0], [0, 4]] {
            assert!(refused(&v2, bad), "{bad:?}");
            assert!(refused(&v2, (bad[0], bad[1])), "{bad:?}");
        }
        assert!(!refused(&v3, [1, 2, 3]) && !refused(&v3, (1, 2, 3)));
        for bad in [[2, 0, 0], [0, 3, 0], [0, 0, 4], [0, 2, 4]] {
            assert!(refused(&v3, bad), "{bad:?}");
            assert!(refused(&v3, (bad[0], bad[1], bad[2])), "{bad:?}");
        }
        // Writes and atomics are checked alike.
        let mut w = v3;
        assert!(
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w[[0, 3, 0]] = 1)).is_err()
        );
        let atomic = std::panic::AssertUnwindSafe(|| v3.element_ptr([0, 0, 4]));
        assert!(std::panic::catch_unwind(atomic).is_err());
    }

    #[test]
    fn lengths_count_every_axis() {
        let mut data = vec![0u8; 24];
        // SAFETY: each view covers `data` (or none of it), which outlives it.
        unsafe {
            let v2 = View2Mut::<u8>::from_raw(data.as_mut_ptr(), [6, 4], "d");
            let v3 = View3::<u8>::from_raw(data.as_mut_ptr(), [2, 3, 4], "d");
            assert_eq!((v2.len(), v3.len()), (24, 24));
            assert!(!v2.is_empty() && !v3.is_empty());
            for dims in [[0, 4, 1], [2, 0, 1], [2, 4, 0]] {
                let e = View3::<u8>::from_raw(data.as_mut_ptr(), dims, "e");
                assert!(e.is_empty(), "{dims:?}");
                assert_eq!(e.len(), 0, "{dims:?}");
            }
            let e = View1::<u8>::from_raw(data.as_mut_ptr(), [0], "e");
            assert!(e.is_empty());
        }
    }

    #[test]
    fn index_3d_is_row_major() {
        let mut data: Vec<i32> = (0..24).collect();
        // SAFETY: the view covers `data`, which outlives it.
        let v: View3<i32> = unsafe { View3::from_raw(data.as_mut_ptr(), [2, 3, 4], "d") };
        assert_eq!(v[[1, 2, 3]], 23);
        assert_eq!(v[[1, 0, 1]], 13);
    }
}
