//! How the CPU backend's rows read a stencil's input arrays: [`Input`], an array's elements,
//! read at a point's neighbours through [`Around`]. In checked mode each read is first tested
//! against the elements nothing has written (see the `unwritten` module of the CPU backend), and a
//! read of one is reported at its line in the stencil's function.

use super::{Geometry, Neighbours, Point};
use crate::cpu::check::unflatten;
use crate::cpu::fault::raise_finding;
use crate::cpu::finding::{Finding, Reader};
use crate::cpu::unwritten::Marks;
use std::panic::Location;

/// An input array of a stencil on the CPU backend: its elements, and in checked mode what of
/// them nothing has written, with its name for the report.
#[derive(Debug)]
pub struct Input<T> {
    ptr: *const T,
    /// Null where every element is written.
    marks: *const Marks,
    /// Where the input's first element is in the marks (a view's, in its array's).
    offset: usize,
    name: &'static str,
}

impl<T> Clone for Input<T> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Input<T> {}

// SAFETY: the rows only read the elements and the marks, which nothing writes while they run
// (the caller's contract in `around`).
unsafe impl<T: Sync> Sync for Input<T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Send for Input<T> {}

impl<T> Input<T> {
    /// The elements at `ptr` of the stencil's parameter `name`, what of them nothing has
    /// written being `marks`, from its element `offset` on.
    pub(crate) fn new(
        ptr: *const T,
        (marks, offset): (Option<&Marks>, usize),
        name: &'static str,
    ) -> Input<T> {
        Input {
            ptr,
            marks: marks.map_or(std::ptr::null(), |m| m as *const Marks),
            offset,
            name,
        }
    }

    /// Whether some element is unwritten, so that the reads need checking.
    pub fn checked(&self) -> bool {
        !self.marks.is_null()
    }

    /// The neighbours of point `p` of `g`, each read tested where `C` (checked mode).
    ///
    /// # Safety
    /// The array has `g`'s shape and outlives the reads, nothing writes it meanwhile, `p` is an
    /// interior point of `g`, and every relative index read lies in the reach `g` holds.
    #[inline(always)]
    pub unsafe fn around<const C: bool>(self, g: &Geometry, p: Point) -> Around<'_, T, C> {
        Around { input: self, g, p }
    }
}

/// The neighbours of one point of a stencil's input on the CPU backend (see
/// [`Input::around`]).
#[derive(Debug)]
pub struct Around<'g, T, const C: bool> {
    input: Input<T>,
    g: &'g Geometry,
    p: Point,
}

impl<T: Copy, const C: bool, const R: usize> Neighbours<T, R> for Around<'_, T, C> {
    #[inline(always)]
    fn at(&self, d: [isize; R]) -> T {
        let o = self.p.neighbour(self.g, d);
        if C {
            // SAFETY: non-null marks are the array's, which outlive the reads (`around`).
            if let Some(marks) = unsafe { self.input.marks.as_ref() } {
                if marks.contains(self.input.offset + o as usize) {
                    self.unwritten::<R>(o as usize, marks)
                }
            }
        }
        // SAFETY: `p` is interior and `d` in the reach (`around`): element `o` is the array's.
        unsafe { *self.input.ptr.offset(o) }
    }
}

impl<T, const C: bool> Around<'_, T, C> {
    /// Stops the stencil at its read of element `o`, which nothing has written.
    #[cold]
    #[inline(never)]
    #[track_caller]
    fn unwritten<const R: usize>(&self, o: usize, marks: &Marks) -> ! {
        raise_finding(Finding::UnwrittenRead {
            array: self.input.name,
            index: index::<R>(self.g, o),
            reader: Reader::Stencil {
                point: index::<R>(self.g, self.p.flat(self.g)),
                at: Location::caller(),
            },
            origin: marks.origin(),
        })
    }
}

/// The index of rank `R` of the flat offset `o` in an array of `g`'s shape.
fn index<const R: usize>(g: &Geometry, o: usize) -> Vec<usize> {
    unflatten(o, &g.shape[3 - R..])
}
