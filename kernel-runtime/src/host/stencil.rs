//! What a `#[stencil]` function's call takes from the host API: its GPU launch's shape, and its
//! output's elements on the CPU backend.

use super::array::Rank;
use super::device_view::{DeviceView, DeviceViewMut};
use super::error::Error;
use super::launch::LaunchConfig;
use super::shape::fixed_dims;
use crate::cpu::check::unwritten_reads;
use crate::cpu::launch::shapes::LaunchView;
use crate::cpu::unwritten::Unwritten;
use crate::device_copy::DeviceCopy;
use crate::stencil::{gpu_blocks, Geometry, Input, BLOCK_THREADS};
use crate::view::{View0, View1, View2, View3};
use ndarray::{Ix0, Ix1, Ix2, Ix3};
use std::borrow::Cow;

/// The launch of a stencil `function` with tiles of `Z × S × K` over `g`: [`gpu_blocks`] blocks
/// of [`BLOCK_THREADS`] threads.
pub fn gpu_config<const Z: usize, const S: usize, const K: usize>(
    function: &'static str,
    g: &Geometry,
) -> Result<LaunchConfig, Error> {
    let [x, y, z] = gpu_blocks::<Z, S, K>(g);
    LaunchConfig::new((x, y, z), (BLOCK_THREADS as usize, 1, 1)).map_err(|reason| {
        Error::InvalidLaunch {
            kernel: function,
            reason,
        }
    })
}

/// The CPU array or view `view` as the stencil's input `name`.
pub fn cpu_input<T: DeviceCopy, D: Rank>(
    view: &DeviceView<'_, T, D>,
    name: &'static str,
) -> Input<T> {
    let marks = view.unwritten.and_then(|u| u.marks());
    Input::new(view.host.as_ptr(), (marks, view.start), name)
}

/// The record of the elements nothing has written of a `standard_indexing` view, numbered from
/// its first element (a copy for part of an array), which its CPU view reads during the launch.
pub struct StandardMarks<'a>(Cow<'a, Unwritten>);

/// The record [`cpu_standard1`] and the others read for `view`.
pub fn cpu_marks<'a, T: DeviceCopy, D: Rank>(view: &DeviceView<'a, T, D>) -> StandardMarks<'a> {
    StandardMarks(view.unwritten_record())
}

macro_rules! standard_view {
    ($($f:ident: $view:ident, $ix:ident;)*) => {$(
        /// A stencil's `standard_indexing` array or view `name` on the CPU backend, viewed as a
        /// kernel's read-only parameter is; in checked mode its reads are tested against the
        /// elements nothing has written ([`view_mode`]), which `marks` has ([`cpu_marks`]).
        pub fn $f<'m, T: DeviceCopy>(
            view: &DeviceView<'m, T, $ix>,
            marks: &'m StandardMarks<'_>,
            name: &'static str,
        ) -> $view<'m, T> {
            let trace = unwritten_reads(marks.0.marks());
            let dims = fixed_dims(&view.dim);
            // SAFETY: the view's elements, of its shape, are the host's and outlive the kernel
            // view; the trace's marks are theirs, numbered from the view's first element.
            unsafe { $view::from_raw(view.host.as_ptr().cast_mut(), dims, name).traced(trace) }
        }
    )*};
}

standard_view! {
    cpu_standard0: View0, Ix0;
    cpu_standard1: View1, Ix1;
    cpu_standard2: View2, Ix2;
    cpu_standard3: View3, Ix3;
}

/// A `standard_indexing` array's view in a stencil's checked rows (`C`) as it is, elsewhere
/// untraced, so that the fast rows test nothing.
#[inline(always)]
pub fn view_mode<const C: bool, V: LaunchView>(view: V) -> V {
    if C {
        view
    } else {
        view.untraced()
    }
}

/// Whether checked mode tests the reads through `view`.
pub fn view_tested<V: LaunchView>(view: &V) -> bool {
    view.tests_unwritten()
}

/// The elements of `out`, a CPU array or view of `g`'s shape that the stencil `function`
/// writes: its interior, and its border too where `border` (it has a `cval`). Checked mode
/// counts what it writes as written, so that a border left unwritten stays so.
pub fn cpu_out<'a, T: DeviceCopy, D: Rank>(
    out: &'a mut DeviceViewMut<'_, T, D>,
    g: &Geometry,
    border: bool,
    function: &'static str,
) -> &'a mut [T] {
    let start = out.start;
    if border {
        out.forget_unwritten();
    } else if let Some(u) = out.unwritten.as_deref_mut() {
        let runs = g.interior_runs().map(|r| r.start + start..r.end + start);
        u.keep_border(runs, function);
    }
    &mut *out.host
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::fault::KernelFault;
    use crate::stencil::{Neighbours, Point, Reach};
    use crate::Device;

    #[test]
    fn a_checked_read_of_an_unwritten_element_names_its_line() {
        let dev = Device::cpu_checked();
        let mut x = dev.empty::<f32, _>((3, 4)).unwrap();
        x.copy_from_host_at(4, &[1.0, 2.0, 3.0, 4.0]).unwrap();
        let g = Geometry::new(
            [3, 4],
            Reach {
                below: [1, 0],
                above: [1, 0],
            },
        );
        let input = cpu_input(&x.view(), "x");
        assert!(input.checked());
        let p = Point {
            base: 4,
            row: 0,
            col: 2,
        };
        // SAFETY: (1, 2) is interior and the reads stay in the reach.
        let here = unsafe { input.around::<true>(&g, p) };
        assert_eq!(here.at([0, 0]), 3.0);
        let line = line!() + 1;
        let caught = std::panic::catch_unwind(|| here.at([-1, 0]));
        let fault = caught.unwrap_err().downcast::<KernelFault>().unwrap();
        let KernelFault::Finding(finding) = *fault else {
            panic!("a finding")
        };
        let text = finding.to_string();
        assert!(text.contains("`x[[0, 2]]`"), "{text}");
        assert!(text.contains(&format!("stencil.rs:{line}")), "{text}");
        assert!(text.contains("point [1, 2]"), "{text}");
        // Unchecked, the same read is the element as it is.
        // SAFETY: as above.
        let plain = unsafe { input.around::<false>(&g, p) };
        assert!(Neighbours::<f32, 2>::at(&plain, [-1, 0]).is_nan());
    }
}
