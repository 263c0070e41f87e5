//! What a `#[guvectorize]` function's call takes from the host API: its layout checked against
//! the arrays' shapes ([`plan`]), its inputs as arrays or scalars ([`GuInput`]), and the CPU
//! backend's parallel loop over its loop indices ([`run_cpu`]).
//!
//! A generalized ufunc (NumPy's, Numba's `@guvectorize`) applies a function of *core* arrays to
//! every index of the *loop* dimensions in front of them: under the layout `(n),(n)->()`, `dot`
//! of two `5 × 3` arrays is the 5 dot products of their rows of 3. The operands' loop
//! dimensions broadcast as NumPy's do: aligned at their last, each dimension is the same in
//! every operand that has it, or 1, where one core serves every index along it (`dot` of
//! `4 × 1 × 3` and `5 × 3` arrays is a `4 × 5` array, every row against every row); an output
//! has all of them. An input of no core dimensions may be a scalar, which every loop index
//! reads. Each operand's cores are then where [`LoopSteps`] puts them.
//!
//! ```
//! use kernel_runtime::host::gufunc::{plan, Layout};
//!
//! // (m,n),(n)->(m): a matrix per loop index times one vector for all.
//! const LAYOUT: Layout = Layout {
//!     text: "(m,n),(n)->(m)",
//!     names: &["m", "n"],
//!     inputs: &[("a", &[0, 1]), ("x", &[1])],
//!     outputs: &[("out", &[0])],
//! };
//! let p = plan("matvec", &LAYOUT, &[Some(&[4, 2, 3]), Some(&[3])], &[Some(&[4, 2])])?;
//! assert_eq!((p.loops, p.inputs[0].steps.step(), p.inputs[1].steps.step()), (4, Some(6), Some(0)));
//! assert_eq!((p.inputs[0].dims, p.outputs[0].dims), ([2, 3, 0], [2, 0, 0]));
//! let wrong = plan("matvec", &LAYOUT, &[Some(&[4, 2, 3]), Some(&[5])], &[Some(&[4, 2])]);
//! assert!(wrong.unwrap_err().to_string().contains("dimension `n` is 3 in `a` and 5 in `x`"));
//! # Ok::<(), kernel_runtime::Error>(())
//! ```

use super::array::{DeviceArray, Rank};
use super::device::Device;
use super::device_view::{DeviceView, DeviceViewMut};
use super::error::Error;
use super::order::{Access, Bytes, Users};
use super::params::GpuParams;
use crate::cores::{Cores, LoopSteps, Scalars, MAX_LOOP_DIMS};
use crate::cpu::unwritten::{Marks, Unwritten};
use crate::device_copy::DeviceCopy;
use std::borrow::Cow;

/// A generalized ufunc's layout as the macro writes it: the names of its core dimensions, and
/// each operand's name and core dimensions, as indices into the names.
#[derive(Debug)]
pub struct Layout {
    /// The layout as written, `"(n),(n)->()"`.
    pub text: &'static str,
    /// The core dimensions' names, in order of first use.
    pub names: &'static [&'static str],
    /// Each input's parameter name and core dimensions.
    pub inputs: &'static [(&'static str, &'static [usize])],
    /// Each output's parameter name (`out` for the return value) and core dimensions.
    pub outputs: &'static [(&'static str, &'static [usize])],
}

/// Where one operand's cores lie: `steps` from one loop index's to another's, each of extents
/// `dims` (its core rank's first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Core {
    /// Elements from the first loop index's core to each other's.
    pub steps: LoopSteps,
    /// The core's extents, padded with zeros to three.
    pub dims: [usize; 3],
}

/// A call's shapes, checked: how many loop indices it runs, and where each operand's cores lie.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The number of loop indices: the product of the loop dimensions.
    pub loops: usize,
    /// Each input's cores.
    pub inputs: Vec<Core>,
    /// Each output's cores.
    pub outputs: Vec<Core>,
    /// Each output's whole shape: the loop dimensions, then its core.
    pub shapes: Vec<Vec<usize>>,
}

impl Plan {
    /// The elements one loop index touches: its cores' sizes together, at least 1.
    pub fn work(&self) -> usize {
        let size = |c: &Core| c.dims.iter().filter(|&&d| d != 0).product::<usize>();
        self.inputs
            .iter()
            .chain(&self.outputs)
            .map(size)
            .sum::<usize>()
    }
}

/// The error of `function`'s call whose shapes do not fit its layout.
fn unfit(function: &'static str, layout: &Layout, reason: String) -> Error {
    Error::LayoutMismatch {
        function,
        layout: layout.text,
        reason,
    }
}

/// An operand's shape split at its core: its loop dimensions, and its core's size and extents.
struct Split {
    name: &'static str,
    shape: Vec<usize>,
    looped: Vec<usize>,
    size: usize,
    dims: [usize; 3],
}

/// The core dimensions' sizes as the operands bind them, each with the operand that bound it
/// first.
struct Binding<'l> {
    function: &'static str,
    layout: &'l Layout,
    sizes: Vec<Option<(usize, &'static str)>>,
}

impl Binding<'_> {
    /// Splits the operand `name` of `shape` at its core dimensions `core`, binding the core's
    /// extents to the others'.
    fn bind(
        &mut self,
        name: &'static str,
        shape: &[usize],
        core: &[usize],
    ) -> Result<Split, Error> {
        let Some(split) = shape.len().checked_sub(core.len()) else {
            let reason = format!(
                "`{name}` has {} dimensions, fewer than its core's {}",
                shape.len(),
                core.len()
            );
            return Err(unfit(self.function, self.layout, reason));
        };
        let mut dims = [0; 3];
        for (k, (&d, &extent)) in core.iter().zip(&shape[split..]).enumerate() {
            match self.sizes[d] {
                Some((size, first)) if size != extent => {
                    let dim = self.layout.names[d];
                    let reason = format!(
                        "dimension `{dim}` is {size} in `{first}` and {extent} in `{name}`"
                    );
                    return Err(unfit(self.function, self.layout, reason));
                }
                _ => self.sizes[d] = Some((extent, name)),
            }
            dims[k] = extent;
        }
        Ok(Split {
            name,
            shape: shape.to_vec(),
            looped: shape[..split].to_vec(),
            size: shape[split..].iter().product(),
            dims,
        })
    }
}

/// The loop dimensions of a call: the operands' broadcast as NumPy's are, aligned at their
/// last, each either the same or 1 (or missing); each with the operand that set it.
#[derive(Default)]
struct Loops {
    dims: Vec<(usize, &'static str)>,
}

impl Loops {
    /// Broadcasts `op`'s loop dimensions with those of the operands before.
    fn add(&mut self, op: &Split) -> Result<(), String> {
        let extra = op.looped.len().saturating_sub(self.dims.len());
        self.dims
            .splice(0..0, op.looped[..extra].iter().map(|&d| (d, op.name)));
        let offset = self.dims.len() - op.looped.len();
        for (k, &d) in op.looped.iter().enumerate().skip(extra) {
            let (have, first) = self.dims[offset + k];
            if have == 1 {
                self.dims[offset + k] = (d, op.name);
            } else if d != 1 && d != have {
                return Err(format!(
                    "`{}` has the loop dimension {d} where `{first}` has {have} (`{}` has the \
                     loop dimensions {:?}, the operands before broadcast to {:?}): loop \
                     dimensions broadcast where they are equal, 1 or missing",
                    op.name,
                    op.name,
                    op.looped,
                    self.shape()
                ));
            }
        }
        Ok(())
    }

    /// The loop dimensions so far.
    fn shape(&self) -> Vec<usize> {
        self.dims.iter().map(|&(d, _)| d).collect()
    }
}

/// Each operand's steps over the loop dimensions `loops` (`None` for a scalar): its stride
/// along each, 0 where it broadcasts, with the dimensions of 1 left out and neighbours it steps
/// through as one taken as one, so that an operand of the loops' own layout (or of one core
/// for all) has one step, and any other at most [`MAX_LOOP_DIMS`] dimensions.
fn steps(loops: &[usize], ops: &[Option<&Split>]) -> Result<Vec<LoopSteps>, String> {
    let mut all = Vec::with_capacity(ops.len());
    for op in ops {
        let Some(op) = op.filter(|_| !loops.contains(&0)) else {
            all.push(LoopSteps::uniform(0));
            continue;
        };
        let missing = loops.len() - op.looped.len();
        let (mut extents, mut strides): (Vec<usize>, Vec<usize>) = (Vec::new(), Vec::new());
        for (k, &extent) in loops.iter().enumerate().filter(|&(_, &e)| e != 1) {
            let stride = match k.checked_sub(missing) {
                Some(j) if op.looped[j] != 1 => {
                    op.size * op.looped[j + 1..].iter().product::<usize>()
                }
                _ => 0,
            };
            // One dimension with the one before where that one's stride is this one's times
            // this extent.
            match (extents.last_mut(), strides.last_mut()) {
                (Some(e), Some(s)) if *s == stride * extent => {
                    *e *= extent;
                    *s = stride;
                }
                _ => {
                    extents.push(extent);
                    strides.push(stride);
                }
            }
        }
        // The extents are as many as the strides, and none is 0: only too many refuse.
        let Some(steps) = LoopSteps::new(&extents, &strides) else {
            return Err(format!(
                "`{}` broadcasts differently over {} of the loop dimensions {loops:?}, more \
                 than the {MAX_LOOP_DIMS} a call takes",
                op.name,
                extents.len()
            ));
        };
        all.push(steps);
    }
    Ok(all)
}

/// Checks the shapes of a call of `function` against its `layout`: `inputs` in order (`None`
/// for a scalar), and the outputs' where given (`None` for a call that makes them, whose shapes
/// are then the inputs' loop dimensions broadcast and their cores' extents as the inputs bind
/// them).
pub fn plan(
    function: &'static str,
    layout: &Layout,
    inputs: &[Option<&[usize]>],
    outputs: &[Option<&[usize]>],
) -> Result<Plan, Error> {
    let fail = |reason: String| unfit(function, layout, reason);
    let mut b = Binding {
        function,
        layout,
        sizes: vec![None; layout.names.len()],
    };
    let mut ins = Vec::with_capacity(inputs.len());
    let mut loops = Loops::default();
    for (&(name, core), shape) in layout.inputs.iter().zip(inputs) {
        let split = shape.map(|shape| b.bind(name, shape, core)).transpose()?;
        if let Some(op) = &split {
            loops.add(op).map_err(fail)?;
        }
        ins.push(split);
    }
    let from_inputs = loops.shape();
    let mut outs = Vec::with_capacity(outputs.len());
    for (&(name, core), given) in layout.outputs.iter().zip(outputs) {
        let shape = match given {
            Some(shape) => shape.to_vec(),
            None => made_shape(&b, &from_inputs, core)?,
        };
        let op = b.bind(name, &shape, core)?;
        loops.add(&op).map_err(fail)?;
        outs.push(op);
    }
    let all = loops.shape();
    if let Some(out) = outs.iter().find(|op| op.looped != all) {
        return Err(fail(format!(
            "`{}` has the loop dimensions {:?} where the operands broadcast to {all:?}: an \
             output has them all",
            out.name, out.looped
        )));
    }
    let ops: Vec<Option<&Split>> = ins
        .iter()
        .map(Option::as_ref)
        .chain(outs.iter().map(Some))
        .collect();
    let steps = steps(&all, &ops).map_err(fail)?;
    let core = |(op, steps): (&Option<&Split>, &LoopSteps)| Core {
        steps: *steps,
        dims: op.map_or([0; 3], |op| op.dims),
    };
    let cores: Vec<Core> = ops.iter().zip(&steps).map(core).collect();
    let (inputs, outputs) = cores.split_at(ins.len());
    Ok(Plan {
        loops: all.iter().product(),
        inputs: inputs.to_vec(),
        outputs: outputs.to_vec(),
        shapes: outs.into_iter().map(|op| op.shape).collect(),
    })
}

/// The shape of the output a call makes: the inputs' loop dimensions `loops`, then its core's
/// extents, each bound by an input.
fn made_shape(b: &Binding<'_>, loops: &[usize], core: &[usize]) -> Result<Vec<usize>, Error> {
    let mut shape = loops.to_vec();
    for &d in core {
        let Some((size, _)) = b.sizes[d] else {
            let reason = format!(
                "the output's dimension `{}` is in no input: give the output, with `apply`",
                b.layout.names[d]
            );
            return Err(unfit(b.function, b.layout, reason));
        };
        shape.push(size);
    }
    Ok(shape)
}

/// An input of a generalized ufunc with `CORE` core dimensions: an array, whose dimensions
/// before its last `CORE` are loop dimensions; or, where `CORE` is 0, a scalar, which every
/// loop index reads.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an input of a generalized ufunc for a core of rank {CORE}",
    label = "not a `&DeviceArray<{T}, _>`",
    note = "an input takes a `&DeviceArray` of its element type, or a view of rows of one (`&x.slice(i..j)?`); one of no core dimensions, `()` in the layout, may also be a scalar that every loop index reads"
)]
pub trait GuInput<'a, T: DeviceCopy, const CORE: usize> {
    /// The array's rank, for a call that makes its output (a scalar's is 0).
    type Dim: Rank;
    /// The input, as the launch reads it.
    #[doc(hidden)]
    fn operand(self) -> Operand<'a, T>;
}

impl<'a, T: DeviceCopy, D: Rank, const CORE: usize> GuInput<'a, T, CORE> for &'a DeviceArray<T, D> {
    type Dim = D;
    fn operand(self) -> Operand<'a, T> {
        Operand::input(&self.view(), self.shape())
    }
}

/// Part of an array: its rows (`&x.slice(i..j)?`), as Numba's `f(x[i:j])`.
impl<'a, T: DeviceCopy, D: Rank, const CORE: usize> GuInput<'a, T, CORE>
    for &'a DeviceView<'_, T, D>
{
    type Dim = D;
    fn operand(self) -> Operand<'a, T> {
        Operand::input(self, self.dim.slice())
    }
}

/// An output of a generalized ufunc: a device array borrowed uniquely (`&mut out`), or a
/// writable view of rows of one (`&mut out.slice_mut(i..j)?`), every element of which the call
/// writes.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an output of a generalized ufunc",
    label = "not a `&mut DeviceArray<{T}, _>`",
    note = "an output takes a `&mut DeviceArray` of its element type, or a writable view of rows of one (`&mut x.slice_mut(i..j)?`)"
)]
pub trait GuOutput<'a, T: DeviceCopy> {
    /// The output, as the launch writes it.
    #[doc(hidden)]
    fn operand(self) -> Operand<'a, T>;
}

impl<'a, T: DeviceCopy, D: Rank> GuOutput<'a, T> for &'a mut DeviceArray<T, D> {
    fn operand(self) -> Operand<'a, T> {
        let host = self.host_ptr_mut();
        Operand {
            value: None,
            addr: *self.device_addr(),
            host,
            array: Some((self.device(), self.shape(), self.users())),
            record: Cow::Owned(Unwritten::default()),
        }
    }
}

impl<'a, T: DeviceCopy, D: Rank> GuOutput<'a, T> for &'a mut DeviceViewMut<'_, T, D> {
    fn operand(self) -> Operand<'a, T> {
        self.forget_unwritten();
        let host = self.host.as_mut_ptr();
        let view: &'a DeviceViewMut<'_, T, D> = self;
        Operand {
            value: None,
            addr: view.addr,
            host,
            array: Some((view.device, view.dim.slice(), view.users)),
            record: Cow::Owned(Unwritten::default()),
        }
    }
}

impl<'a, T: DeviceCopy> GuInput<'a, T, 0> for T {
    type Dim = ndarray::Ix0;
    fn operand(self) -> Operand<'a, T> {
        Operand {
            value: Some(self),
            addr: 0,
            host: core::ptr::null_mut(),
            array: None,
            record: Cow::Owned(Unwritten::default()),
        }
    }
}

/// One input or the output of a call, its array's type forgotten: a scalar's value, or an
/// array's addresses (on a GPU and on the host), device, shape and users.
pub struct Operand<'a, T> {
    value: Option<T>,
    addr: u64,
    host: *mut T,
    array: Option<(&'a Device, &'a [usize], &'a Users)>,
    /// In checked mode, an input's elements that nothing has written, numbered from its first
    /// (see [`DeviceView::unwritten_record`]).
    record: Cow<'a, Unwritten>,
}

impl<'a, T: DeviceCopy> Operand<'a, T> {
    /// An input reading the elements of `view`, of shape `shape`.
    fn input<D: Rank>(view: &DeviceView<'a, T, D>, shape: &'a [usize]) -> Operand<'a, T> {
        Operand {
            value: None,
            addr: view.addr,
            host: view.host.as_ptr().cast_mut(),
            array: Some((view.device, shape, view.users)),
            record: view.unwritten_record(),
        }
    }

    /// In checked mode, the elements of an input that nothing has written.
    fn marks(&self) -> Option<&Marks> {
        self.record.marks()
    }

    /// The array's shape; `None` for a scalar.
    pub fn shape(&self) -> Option<&'a [usize]> {
        self.array.map(|(_, shape, _)| shape)
    }

    /// The array's device; `None` for a scalar.
    pub fn device(&self) -> Option<&'a Device> {
        self.array.map(|(device, _, _)| device)
    }

    /// The array's elements in a GPU's memory where `gpu`, else the host's.
    fn ptr(&self, gpu: bool) -> *mut T {
        if gpu {
            self.addr as *mut T
        } else {
            self.host
        }
    }

    /// The array's cores as the plan lays them out (`core`), in a GPU's memory where `gpu`,
    /// else the host's, where checked mode tests each read of an input against the elements
    /// nothing has written.
    pub fn cores<const R: usize>(&self, core: &Core, gpu: bool) -> Cores<T, R> {
        let ptr = self.ptr(gpu);
        let mut dims = [0; R];
        dims.copy_from_slice(&core.dims[..R]);
        let cores = Cores::with_steps(ptr, core.steps, dims);
        if gpu {
            return cores;
        }
        // SAFETY: the marks are the array's, which the operand borrows for as long as the call
        // that makes views of the cores, or a window of them, boxed, which it keeps as long.
        unsafe { cores.checked(self.marks()) }
    }

    /// An input whose core is `()`, `name` of `function`: the scalar, or the array's elements
    /// as [`cores`](Self::cores). Every loop index reads its element, so in checked mode an
    /// element nothing has written is an error.
    pub fn scalars(
        &self,
        core: &Core,
        gpu: bool,
        (function, name): (&'static str, &'static str),
    ) -> Result<Scalars<T>, Error> {
        let Some(value) = self.value else {
            let shape = self.shape().unwrap_or(&[]);
            super::elementwise::whole_read(function, name, self.marks(), shape)?;
            return Ok(Scalars::each(self.ptr(gpu), core.steps));
        };
        Ok(Scalars::one(value))
    }

    /// Records that the GPU launch `params` reads the array (writes it, where `write`).
    pub fn record<'p>(&'p self, params: &mut GpuParams<'p>, write: bool) {
        if let Some((_, shape, users)) = self.array {
            let access = if write { Access::Write } else { Access::Read };
            let len = shape.iter().product::<usize>();
            params.uses(users.span(Bytes::elements::<T>(self.addr, len)), access);
        }
    }
}

/// The device of a call of `function` over `operands` (by name): the one their arrays live on,
/// `Device::default()` where none is an array.
pub fn device_of(
    function: &'static str,
    operands: &[(&'static str, Option<&Device>)],
) -> Result<Device, Error> {
    let mut arrays = operands.iter().filter_map(|&(n, d)| Some((n, d?)));
    super::args::pick_device(function, None, &mut arrays)
}

/// The shapes of the outputs of a call of `function` over `inputs` that makes them: the inputs'
/// loop dimensions, then each output's core as the inputs bind it.
pub fn made_shapes(
    function: &'static str,
    layout: &Layout,
    inputs: &[Option<&[usize]>],
) -> Result<Vec<Vec<usize>>, Error> {
    let none = vec![None; layout.outputs.len()];
    Ok(plan(function, layout, inputs, &none)?.shapes)
}

/// An output of `shape` (of [`made_shapes`]) of a call of `function` that makes it: zeros, on
/// `device`. Its rank `O` is the first input's, less its core and with the output's core: a
/// first input without loop dimensions under another's that has them gives a rank other than
/// `O`'s, which is an error naming `apply`.
pub fn made_output<T: DeviceCopy, O: Rank>(
    function: &'static str,
    layout: &Layout,
    shape: &[usize],
    device: &Device,
) -> Result<DeviceArray<T, O>, Error> {
    if O::NDIM != Some(shape.len()) {
        let reason = format!(
            "its output has {} dimensions, where the first input's rank gives {}: give the \
             output, with `apply`",
            shape.len(),
            O::NDIM.unwrap_or(0)
        );
        return Err(unfit(function, layout, reason));
    }
    let mut dim = O::zeros(shape.len());
    dim.slice_mut().copy_from_slice(shape);
    DeviceArray::zeros(device, dim)
}

/// Runs `f(lo, hi)` over the loop indices of `plan` on the CPU backend, in parallel, each range
/// of about `TASK_WORK` elements' work; a panic is the fault of `kernel`, a read that checked
/// mode finds the finding.
pub fn run_cpu(
    kernel: &'static str,
    plan: &Plan,
    f: &(dyn Fn(usize, usize) + Sync),
) -> Result<(), Error> {
    loops(plan.loops, plan.work(), f).map_err(|fault| fault.into_error(kernel))
}

/// Loop indices per task of the CPU backend's loop, at least: enough that a task's work is
/// worth handing to another core.
const TASK_WORK: usize = 1 << 14;

/// Runs `f(lo, hi)` over disjoint ranges of loop indices covering `0..loops`, in parallel, each
/// range of about `TASK_WORK` elements' work at `work` elements a loop index.
fn loops(
    loops: usize,
    work: usize,
    f: &(dyn Fn(usize, usize) + Sync),
) -> Result<(), crate::cpu::fault::KernelFault> {
    let chunk = TASK_WORK.div_ceil(work.max(1)).max(1);
    let task = |c: usize| {
        let done = crate::cpu::tasks::guarded(|| f(c * chunk, ((c + 1) * chunk).min(loops)));
        // Checked cores name the loop index they read for (see `Cores::view`): no longer.
        crate::cpu::check::at_loop_index(None);
        done
    };
    crate::cpu::tasks::run(loops.div_ceil(chunk), &task)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MATMUL: Layout = Layout {
        text: "(m,n),(n,p)->(m,p)",
        names: &["m", "n", "p"],
        inputs: &[("a", &[0, 1]), ("b", &[1, 2])],
        outputs: &[("c", &[0, 2])],
    };

    const SHIFT: Layout = Layout {
        text: "(n),()->(n)",
        names: &["n"],
        inputs: &[("x", &[0]), ("y", &[])],
        outputs: &[("out", &[0])],
    };

    fn err(r: Result<Plan, Error>) -> String {
        r.unwrap_err().to_string()
    }

    #[test]
    fn loop_dimensions_and_cores_follow_the_layout() {
        let p = plan(
            "mm",
            &MATMUL,
            &[Some(&[2, 3, 4]), Some(&[2, 4, 5])],
            &[None],
        )
        .unwrap();
        assert_eq!((p.loops, p.shapes[0].clone()), (2, vec![2, 3, 5]));
        assert_eq!(
            p.inputs,
            [
                Core {
                    steps: LoopSteps::uniform(12),
                    dims: [3, 4, 0]
                },
                Core {
                    steps: LoopSteps::uniform(20),
                    dims: [4, 5, 0]
                }
            ]
        );
        assert_eq!(
            p.outputs[0],
            Core {
                steps: LoopSteps::uniform(15),
                dims: [3, 5, 0]
            }
        );
        assert_eq!(p.work(), 12 + 20 + 15);
        // One `b` for every loop index; no loop dimensions at all.
        let p = plan("mm", &MATMUL, &[Some(&[7, 3, 4]), Some(&[4, 5])], &[None]).unwrap();
        assert_eq!(
            (
                p.loops,
                p.inputs[1].steps.step().unwrap(),
                p.shapes[0].clone()
            ),
            (7, 0, vec![7, 3, 5])
        );
        let p = plan(
            "mm",
            &MATMUL,
            &[Some(&[3, 4]), Some(&[4, 5])],
            &[Some(&[3, 5])],
        )
        .unwrap();
        // One loop index: no step at all.
        assert_eq!(
            (
                p.loops,
                p.inputs[0].steps.step().unwrap(),
                p.outputs[0].steps.step().unwrap()
            ),
            (1, 0, 0)
        );
        // Loop dimensions of 1 broadcast as none; an output's are the loops.
        let p = plan(
            "mm",
            &MATMUL,
            &[Some(&[1, 3, 4]), Some(&[6, 4, 5])],
            &[None],
        )
        .unwrap();
        assert_eq!(
            (
                p.loops,
                p.inputs[0].steps.step().unwrap(),
                p.shapes[0].clone()
            ),
            (6, 0, vec![6, 3, 5])
        );
        let p = plan("mm", &MATMUL, &[Some(&[1, 3, 4]), Some(&[4, 5])], &[None]).unwrap();
        assert_eq!(
            (
                p.loops,
                p.outputs[0].steps.step().unwrap(),
                p.shapes[0].clone()
            ),
            (1, 0, vec![1, 3, 5])
        );
    }

    #[test]
    fn loop_dimensions_broadcast_as_numpys() {
        const DOT: Layout = Layout {
            text: "(n),(n)->()",
            names: &["n"],
            inputs: &[("x", &[0]), ("y", &[0])],
            outputs: &[("out", &[])],
        };
        let dot = |x: &[usize], y: &[usize]| plan("dot", &DOT, &[Some(x), Some(y)], &[None]);
        // Every row of `x` against every row of `y`: `x[:, None]` and `y[None, :]`.
        let p = dot(&[4, 1, 3], &[1, 5, 3]).unwrap();
        assert_eq!((p.loops, p.shapes[0].clone()), (20, vec![4, 5]));
        let offsets = |c: &Core| (0..20).map(|i| c.steps.offset(i)).collect::<Vec<_>>();
        let want_x: Vec<usize> = (0..20).map(|i| i / 5 * 3).collect();
        let want_y: Vec<usize> = (0..20).map(|i| i % 5 * 3).collect();
        assert_eq!(offsets(&p.inputs[0]), want_x);
        assert_eq!(offsets(&p.inputs[1]), want_y);
        assert_eq!(p.outputs[0].steps.step(), Some(1));
        // Fewer dimensions align at the last: (5, 1, n) against (4, n).
        let p = dot(&[5, 1, 3], &[4, 3]).unwrap();
        assert_eq!((p.loops, p.shapes[0].clone()), (20, vec![5, 4]));
        let rows_of_y: Vec<usize> = (0..20).map(|i| i % 4 * 3).collect();
        assert_eq!(offsets(&p.inputs[1]), rows_of_y);
        // Dimensions that an operand steps through as one are one step.
        let p = dot(&[2, 3, 4, 3], &[2, 3, 4, 3]).unwrap();
        assert_eq!((p.loops, p.inputs[0].steps.step()), (24, Some(3)));
        let p = dot(&[2, 1, 1, 3], &[2, 3, 4, 3]).unwrap();
        assert_eq!(Some(p.inputs[0].steps), LoopSteps::new(&[2, 12], &[3, 0]));
        // Broadcasting that alternates over five dimensions is more than a call takes.
        let e = err(dot(&[2, 1, 2, 1, 2, 3], &[1, 2, 1, 2, 1, 3]));
        assert!(
            e.contains("differently over 5 of the loop dimensions"),
            "{e}"
        );
        let e = err(dot(&[2, 3, 3], &[4, 3]));
        assert!(
            e.contains("`y` has the loop dimension 4 where `x` has 3"),
            "{e}"
        );
    }

    #[test]
    fn several_outputs_share_the_loops() {
        // (n)->(),(n): a norm and the normalised vector.
        const SPLIT: Layout = Layout {
            text: "(n)->(),(n)",
            names: &["n"],
            inputs: &[("x", &[0])],
            outputs: &[("norm", &[]), ("unit", &[0])],
        };
        let p = plan("split", &SPLIT, &[Some(&[5, 3])], &[None, None]).unwrap();
        assert_eq!((p.loops, p.shapes.clone()), (5, vec![vec![5], vec![5, 3]]));
        assert_eq!(
            (
                p.outputs[0].steps.step().unwrap(),
                p.outputs[1].steps.step().unwrap()
            ),
            (1, 3)
        );
        let e = err(plan(
            "split",
            &SPLIT,
            &[Some(&[5, 3])],
            &[Some(&[5]), Some(&[4, 3])],
        ));
        assert!(
            e.contains("`unit` has the loop dimension 4 where `x` has 5"),
            "{e}"
        );
    }

    #[test]
    fn an_input_named_as_the_return_value_is_an_input() {
        // The return value is `out` in the layout; so may an input be called.
        const DOT: Layout = Layout {
            text: "(n),(n)->()",
            names: &["n"],
            inputs: &[("out", &[0]), ("x", &[0])],
            outputs: &[("out", &[])],
        };
        let p = plan("dot", &DOT, &[Some(&[1, 3]), Some(&[5, 3])], &[None]).unwrap();
        assert_eq!(
            (p.loops, p.inputs[0].steps.step().unwrap(), p.shapes.clone()),
            (5, 0, vec![vec![5]])
        );
    }

    #[test]
    fn scalars_and_empty_loops() {
        let p = plan("shift", &SHIFT, &[Some(&[0, 6]), None], &[None]).unwrap();
        assert_eq!(
            (p.loops, p.inputs[1], p.shapes[0].clone()),
            (
                0,
                Core {
                    steps: LoopSteps::uniform(0),
                    dims: [0; 3]
                },
                vec![0, 6]
            )
        );
        let p = plan(
            "shift",
            &SHIFT,
            &[Some(&[4, 6]), Some(&[4])],
            &[Some(&[4, 6])],
        )
        .unwrap();
        assert_eq!((p.loops, p.inputs[1].steps.step().unwrap()), (4, 1));
    }

    #[test]
    fn shapes_that_do_not_fit_are_named() {
        // The error of `mm` over `a`, `b` and `c` (made where `None`), which must say `what`.
        let refused = |a: &[usize], b: &[usize], c: Option<&[usize]>, what: &str| {
            let e = err(plan("mm", &MATMUL, &[Some(a), Some(b)], &[c]));
            assert!(
                e.contains("`mm`") && e.contains("(m,n),(n,p)->(m,p)"),
                "{e}"
            );
            assert!(e.contains(what), "{e}");
        };
        refused(
            &[2, 3, 4],
            &[2, 5, 5],
            None,
            "dimension `n` is 4 in `a` and 5 in `b`",
        );
        refused(
            &[2, 3, 4],
            &[3, 4, 5],
            None,
            "`b` has the loop dimension 3 where `a` has 2",
        );
        refused(
            &[4],
            &[4, 5],
            None,
            "`a` has 1 dimensions, fewer than its core's 2",
        );
        refused(
            &[3, 4],
            &[4, 5],
            Some(&[3, 6]),
            "dimension `p` is 5 in `b` and 6 in `c`",
        );
        let loops = "`c` has the loop dimension 3 where `a` has 2";
        refused(&[2, 3, 4], &[4, 5], Some(&[3, 3, 5]), loops);
        refused(
            &[2, 3, 4],
            &[4, 5],
            Some(&[3, 5]),
            "`c` has the loop dimensions [] where the operands broadcast to [2]",
        );
        const GROW: Layout = Layout {
            text: "(n)->(k)",
            names: &["n", "k"],
            inputs: &[("x", &[0])],
            outputs: &[("y", &[1])],
        };
        let e = err(plan("grow", &GROW, &[Some(&[3])], &[None]));
        assert!(e.contains("dimension `k` is in no input"), "{e}");
        let p = plan("grow", &GROW, &[Some(&[2, 3])], &[Some(&[2, 8])]).unwrap();
        assert_eq!((p.loops, p.outputs[0].steps.step().unwrap()), (2, 8));
    }

    #[test]
    fn the_cpu_loop_covers_every_index_once() {
        for (n, work) in [(0, 1), (1, 1), (100_000, 1), (37, 100_000), (1000, 100)] {
            let seen: Vec<_> = (0..n)
                .map(|_| std::sync::atomic::AtomicU8::new(0))
                .collect();
            loops(n, work, &|lo, hi| {
                for s in &seen[lo..hi] {
                    s.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            })
            .unwrap();
            assert!(seen
                .iter()
                .all(|s| s.load(std::sync::atomic::Ordering::Relaxed) == 1));
        }
        let e = loops(10, 1, &|_, _| panic!("in the core")).unwrap_err();
        let e = e.into_error("f").to_string();
        assert!(e.contains("in the core"), "{e}");
    }
}
