//! A generalized ufunc's operand (`#[guvectorize]`) as its loop indices read it, the same on
//! both targets: where its cores lie ([`Cores`]) or, for an input whose core is `()`, its value
//! ([`Scalars`]). A GPU launch passes each as two parameters, its pointer and the rest; the CPU
//! backend hands the same values to its tasks.
//!
//! ```
//! use kernel_runtime::cores::Cores;
//!
//! // Two loop indices of 2 × 3 matrices.
//! let mut m: Vec<f32> = (0..12).map(|v| v as f32).collect();
//! let cores = Cores::<f32, 2>::new(m.as_mut_ptr(), 6, [2, 3]);
//! // SAFETY: `m` holds both cores, and outlives the view.
//! let second = unsafe { cores.view(1, "m") };
//! assert_eq!(second[[1, 0]], 9.0);
//! ```

use crate::view::{View1, View1Mut, View2, View2Mut, View3, View3Mut};
use core::mem::MaybeUninit;

/// Where one operand's cores lie: loop index `i`'s at `ptr` plus [`LoopSteps::offset`]`(i)`
/// elements, each of extents `dims` (row-major). A step of 0 gives every loop index the same
/// core.
///
/// A GPU launch passes the pointer as a parameter of its own, which the compiler then knows to
/// be in global memory (a pointer inside a struct parameter is read and written through
/// generic addressing), and the rest as a [`CoreShape`]: [`parts`](Self::parts),
/// [`from_parts`](Self::from_parts).
#[derive(Debug)]
pub struct Cores<T, const R: usize> {
    ptr: *mut T,
    shape: CoreShape<R>,
    /// On the CPU backend in checked mode, the input's elements that nothing has written
    /// (null: none, or not checked).
    #[cfg(not(target_arch = "nvptx64"))]
    marks: *const crate::cpu::unwritten::Marks,
}

/// The steps and extents of an operand's cores (see [`Cores`]).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CoreShape<const R: usize> {
    steps: LoopSteps,
    dims: [usize; R],
}

/// The most loop dimensions that a call's operands step through differently, once the
/// dimensions that every operand steps through alike are taken as one.
pub const MAX_LOOP_DIMS: usize = 4;

/// How far one operand's core of each loop index lies from its first: the loop index taken
/// apart over the loop dimensions (NumPy's order, the last fastest), times the operand's
/// stride along each, 0 along those it broadcasts over.
///
/// ```
/// use kernel_runtime::cores::LoopSteps;
///
/// // Loops of 2 × 3; an operand of one core of 5 per row (it broadcasts over the columns).
/// let rows = LoopSteps::new(&[2, 3], &[5, 0]).unwrap();
/// assert_eq!((0..6).map(|i| rows.offset(i)).collect::<Vec<_>>(), [0, 0, 0, 5, 5, 5]);
/// assert_eq!(LoopSteps::uniform(4).offset(3), 12);
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoopSteps {
    /// The stride along each loop dimension, the outermost first.
    strides: [usize; MAX_LOOP_DIMS],
    /// The extents of the loop dimensions after the outermost.
    inner: [usize; MAX_LOOP_DIMS - 1],
    /// How many of `inner` there are: 0 where one step covers the loops.
    rank: usize,
}

impl LoopSteps {
    /// Loop index `i` at `i * step`.
    #[inline(always)]
    pub const fn uniform(step: usize) -> Self {
        LoopSteps {
            strides: [step, 0, 0, 0],
            inner: [1; MAX_LOOP_DIMS - 1],
            rank: 0,
        }
    }

    /// Loops of `extents` (the outermost first) with `strides` along them; `None` where the two
    /// differ in length, are longer than [`MAX_LOOP_DIMS`], or an extent after the first is 0
    /// (which no loop index could be taken apart over).
    pub fn new(extents: &[usize], strides: &[usize]) -> Option<Self> {
        let fits = extents.len() == strides.len() && extents.len() <= MAX_LOOP_DIMS;
        if !fits || extents.iter().skip(1).any(|&e| e == 0) {
            return None;
        }
        let Some((&outer, rest)) = strides.split_first() else {
            return Some(Self::uniform(0));
        };
        let mut steps = Self::uniform(outer);
        steps.rank = rest.len();
        steps.strides[1..=rest.len()].copy_from_slice(rest);
        steps.inner[..rest.len()].copy_from_slice(&extents[1..]);
        Some(steps)
    }

    /// The operand's stride from one loop index to the next, where the loops are one
    /// dimension to it.
    pub fn step(&self) -> Option<usize> {
        (self.rank == 0).then_some(self.strides[0])
    }

    /// Elements from the first core to loop index `i`'s.
    #[inline(always)]
    pub fn offset(&self, i: usize) -> usize {
        if self.rank == 0 {
            return i * self.strides[0];
        }
        // The innermost dimension first, each index a constant, so that on a GPU the steps
        // stay in registers (an index that varies puts an array in local memory).
        let (mut rest, mut offset) = (i, 0);
        if self.rank >= 3 {
            offset += rest % self.inner[2] * self.strides[3];
            rest /= self.inner[2];
        }
        if self.rank >= 2 {
            offset += rest % self.inner[1] * self.strides[2];
            rest /= self.inner[1];
        }
        offset += rest % self.inner[0] * self.strides[1];
        rest /= self.inner[0];
        offset + rest * self.strides[0]
    }
}

impl<T, const R: usize> Clone for Cores<T, R> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, const R: usize> Copy for Cores<T, R> {}

// SAFETY: a launch's loop indices write disjoint output cores and only read the inputs, so the
// tasks that share the pointers never touch an element that another writes.
unsafe impl<T, const R: usize> Send for Cores<T, R> {}
// SAFETY: as above.
unsafe impl<T, const R: usize> Sync for Cores<T, R> {}

impl<T, const R: usize> Cores<T, R> {
    /// The cores at `ptr`, `step` elements apart, of extents `dims`.
    #[inline(always)]
    pub fn new(ptr: *mut T, step: usize, dims: [usize; R]) -> Self {
        Self::with_steps(ptr, LoopSteps::uniform(step), dims)
    }

    /// The cores at `ptr`, where `steps` puts each loop index's, of extents `dims`.
    #[inline(always)]
    pub fn with_steps(ptr: *mut T, steps: LoopSteps, dims: [usize; R]) -> Self {
        Cores::from_parts(ptr, CoreShape { steps, dims })
    }

    /// The same cores, their reads tested against `marks`, the input's elements that nothing
    /// has written (checked mode).
    ///
    /// # Safety
    /// The marks must be the input's, and outlive every view of the cores.
    #[cfg(not(target_arch = "nvptx64"))]
    pub(crate) unsafe fn checked(self, marks: Option<&crate::cpu::unwritten::Marks>) -> Self {
        let marks = marks.map_or(core::ptr::null(), |m| m as *const _);
        Cores { marks, ..self }
    }

    /// The pointer and the shape, as a GPU launch passes them.
    #[inline(always)]
    pub fn parts(&self) -> (&*mut T, &CoreShape<R>) {
        (&self.ptr, &self.shape)
    }

    /// The cores of a launch's parameters ([`parts`](Self::parts)).
    #[inline(always)]
    pub fn from_parts(ptr: *mut T, shape: CoreShape<R>) -> Self {
        Cores {
            ptr,
            shape,
            #[cfg(not(target_arch = "nvptx64"))]
            marks: core::ptr::null(),
        }
    }

    /// The first element of loop index `i`'s core.
    ///
    /// # Safety
    /// The core of `i` lies in the operand's allocation.
    #[inline(always)]
    unsafe fn at(self, i: usize) -> *mut T {
        // SAFETY: the caller's contract.
        unsafe { self.ptr.add(self.shape.steps.offset(i)) }
    }
}

impl<T> Cores<T, 0> {
    /// Loop index `i`'s element, to write: an output's whose core is `()`.
    ///
    /// # Safety
    /// The element lies in the operand's allocation, and no other thread touches it for as
    /// long as `'a`.
    #[inline(always)]
    pub unsafe fn element<'a>(self, i: usize) -> &'a mut T {
        // SAFETY: the caller's contract.
        unsafe { &mut *self.at(i) }
    }
}

impl<T: Copy> Cores<T, 0> {
    /// Loop index `i`'s element.
    ///
    /// # Safety
    /// The element lies in the operand's allocation, initialised.
    #[inline(always)]
    pub unsafe fn get(self, i: usize) -> T {
        // SAFETY: the caller's contract.
        unsafe { *self.at(i) }
    }

    /// Writes loop index `i`'s element.
    ///
    /// # Safety
    /// The element lies in the operand's allocation, and no other thread touches it.
    #[inline(always)]
    pub unsafe fn set(self, i: usize, value: T) {
        // SAFETY: the caller's contract.
        unsafe { *self.at(i) = value }
    }
}

macro_rules! views {
    ($($rank:literal: $view:ident, $view_mut:ident;)*) => {$(
        impl<T> Cores<T, $rank> {
            /// Loop index `i`'s core, to read, each index checked against its extents; `name`
            /// is the parameter's, for the error of an index outside.
            ///
            /// # Safety
            /// The core lies in the operand's allocation, initialised, for as long as `'a`.
            #[inline(always)]
            pub unsafe fn view<'a>(self, i: usize, name: &'static str) -> $view<'a, T, true> {
                // SAFETY: the caller's contract.
                unsafe { $view::from_raw(self.at(i), self.shape.dims, name) }
            }

            /// [`view`](Self::view) in checked mode: each read tested against the elements
            /// of the input that nothing has written, where there are any. A view of its own,
            /// so that `view`'s reads have no test to make.
            ///
            /// # Safety
            /// As [`view`](Self::view).
            #[cfg(not(target_arch = "nvptx64"))]
            #[inline(always)]
            pub unsafe fn view_checked<'a>(self, i: usize, name: &'static str) -> $view<'a, T, true> {
                // SAFETY: the caller's contract.
                let view = unsafe { self.view(i, name) };
                if self.marks.is_null() {
                    return view;
                }
                // SAFETY: the marks are the input's and outlive the view (`checked`), and the
                // trace starts at the core's first element, the view's.
                unsafe { view.traced(self.trace(i)) }
            }

            /// Loop index `i`'s core, to write, as [`view`](Self::view).
            ///
            /// # Safety
            /// As [`view`](Self::view), and no other thread touches the core.
            #[inline(always)]
            pub unsafe fn view_mut<'a>(self, i: usize, name: &'static str) -> $view_mut<'a, T, true> {
                // SAFETY: the caller's contract.
                unsafe { $view_mut::from_raw(self.at(i), self.shape.dims, name) }
            }
        }
    )*};
}

#[cfg(not(target_arch = "nvptx64"))]
impl<T, const R: usize> Cores<T, R> {
    /// The trace of a view of loop index `i`'s core: its reads tested against the marks; and
    /// this thread's loop index made `i`, for a report.
    ///
    /// # Safety
    /// The marks are not null, the input's, and outlive the view.
    #[cold]
    unsafe fn trace(self, i: usize) -> crate::cpu::check::Trace {
        crate::cpu::check::at_loop_index(Some(i));
        // SAFETY: the caller's contract.
        let marks = unsafe { &*self.marks };
        crate::cpu::check::unwritten_reads(Some(marks)).skip(self.shape.steps.offset(i))
    }
}

views! {
    1: View1, View1Mut;
    2: View2, View2Mut;
    3: View3, View3Mut;
}

/// An input whose core is `()`: an array of one element per loop index, or, where its pointer
/// is null, one value that every loop index reads. A GPU launch passes it as [`Cores`]: the
/// pointer, then the rest ([`ScalarShape`]).
#[derive(Debug)]
pub struct Scalars<T> {
    ptr: *mut T,
    shape: ScalarShape<T>,
}

/// The value and the steps of [`Scalars`].
#[repr(C)]
#[derive(Debug)]
pub struct ScalarShape<T> {
    value: MaybeUninit<T>,
    steps: LoopSteps,
}

impl<T: Copy> Clone for ScalarShape<T> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: Copy> Copy for ScalarShape<T> {}

impl<T: Copy> Clone for Scalars<T> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: Copy> Copy for Scalars<T> {}

// SAFETY: as `Cores`: the loop indices only read an input.
unsafe impl<T: Send> Send for Scalars<T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Sync for Scalars<T> {}

impl<T: Copy> Scalars<T> {
    /// The value every loop index reads.
    #[inline(always)]
    pub fn one(value: T) -> Self {
        Scalars {
            ptr: core::ptr::null_mut(),
            shape: ScalarShape {
                value: MaybeUninit::new(value),
                steps: LoopSteps::uniform(0),
            },
        }
    }

    /// An array of one element per loop index at `ptr`, not null, where `steps` puts each.
    #[inline(always)]
    pub fn each(ptr: *mut T, steps: LoopSteps) -> Self {
        Scalars {
            ptr,
            shape: ScalarShape {
                value: MaybeUninit::uninit(),
                steps,
            },
        }
    }

    /// The pointer and the rest, as a GPU launch passes them.
    #[inline(always)]
    pub fn parts(&self) -> (&*mut T, &ScalarShape<T>) {
        (&self.ptr, &self.shape)
    }

    /// The scalars of a launch's parameters ([`parts`](Self::parts)).
    #[inline(always)]
    pub fn from_parts(ptr: *mut T, shape: ScalarShape<T>) -> Self {
        Scalars { ptr, shape }
    }

    /// Loop index `i`'s value.
    ///
    /// # Safety
    /// Made by [`one`](Self::one), or by [`each`](Self::each) of an array holding loop index
    /// `i`'s element, initialised.
    #[inline(always)]
    pub unsafe fn get(self, i: usize) -> T {
        if self.ptr.is_null() {
            // SAFETY: `one` wrote the value; `each` takes no null pointer.
            unsafe { self.shape.value.assume_init() }
        } else {
            // SAFETY: the caller's contract.
            unsafe { *self.ptr.add(self.shape.steps.offset(i)) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cores_and_scalars_read_each_loop_index() {
        let mut v: Vec<i32> = (0..24).collect();
        let c = Cores::<i32, 3>::new(v.as_mut_ptr(), 12, [2, 2, 3]);
        // SAFETY: `v` holds both cores of 12.
        unsafe {
            assert_eq!(c.view(1, "v")[[1, 1, 2]], 23);
            c.view_mut(0, "v")[[0, 1, 0]] = -1;
        }
        assert_eq!(v[3], -1);
        let one = Scalars::one(7u8);
        let mut each = [1u8, 2, 3];
        let many = Scalars::each(each.as_mut_ptr(), LoopSteps::uniform(1));
        // SAFETY: `one`'s value; `each` holds three elements.
        unsafe {
            assert_eq!((one.get(5), many.get(2)), (7, 3));
        }
        let flat = Cores::<u8, 0>::new(each.as_mut_ptr(), 1, []);
        // SAFETY: as above.
        unsafe { flat.set(0, 9) };
        assert_eq!(each[0], 9);
    }

    #[test]
    fn loop_steps_take_the_loop_index_apart() {
        // Loops of 2 × 3 × 4: an operand that broadcasts over the middle one, cores of 10.
        let steps = LoopSteps::new(&[2, 3, 4], &[40, 0, 10]).unwrap();
        for i in 0..24 {
            let (a, c) = (i / 12, i % 4);
            assert_eq!(steps.offset(i), a * 40 + c * 10, "{i}");
        }
        assert_eq!(steps.step(), None);
        assert_eq!(LoopSteps::new(&[7], &[3]), Some(LoopSteps::uniform(3)));
        assert_eq!(LoopSteps::new(&[], &[]).unwrap().offset(5), 0);
        // What no loop index could be taken apart over is no steps, not a panic.
        assert_eq!(LoopSteps::new(&[2, 3], &[1]), None);
        assert_eq!(LoopSteps::new(&[2, 0], &[1, 1]), None);
        assert_eq!(LoopSteps::new(&[1; 5], &[1; 5]), None);
    }
}
