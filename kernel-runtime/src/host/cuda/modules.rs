//! The modules loaded into a GPU's context: the crate's PTX, or its cubin for this GPU, or the
//! two linked with foreign device code, loaded once; and the kernels and variables looked up
//! in them.

use super::CudaDevice;
use crate::host::error::Error;
use crate::host::link;
use cudarc::driver::{result, sys};
use std::collections::HashMap;
use std::ffi::{c_void, CString};

/// Whether the driver refused a module for its PTX (a newer ISA or GPU than it serves), where
/// advice on the driver or `KERNEL_PTX_ARCH` helps; not for errors such as a missing context.
fn is_refused_ptx(code: sys::CUresult) -> bool {
    use sys::CUresult::*;
    matches!(
        code,
        CUDA_ERROR_INVALID_PTX | CUDA_ERROR_UNSUPPORTED_PTX_VERSION | CUDA_ERROR_NO_BINARY_FOR_GPU
    )
}

/// `KERNEL_JIT=1`: load the PTX of every module, never a cubin built ahead of time.
fn jit_only() -> bool {
    std::env::var("KERNEL_JIT").is_ok_and(|v| v.trim() == "1")
}

/// The PTX modules loaded into a context, and where each one's text was seen.
#[derive(Default)]
pub(super) struct Modules {
    loaded: Vec<Module>,
    /// The index in `loaded` of the module of the PTX text at each address.
    by_address: HashMap<usize, usize>,
}

/// A loaded PTX module and the functions looked up in it.
struct Module {
    module: sys::CUmodule,
    /// Its text.
    ptx: &'static str,
    functions: HashMap<&'static str, sys::CUfunction>,
}

/// The dynamic shared memory a function may have without opting in (CUDA's 48 KiB).
const OPT_IN_ABOVE: usize = 48 * 1024;

// SAFETY: CUDA driver handles may be used from any thread once their context is current there;
// every use binds the context first.
unsafe impl Send for Module {}

impl Modules {
    /// Unloads every module.
    ///
    /// # Safety
    /// No launch uses a module of them any more, nor will.
    pub(super) unsafe fn unload(&mut self) {
        for m in self.loaded.drain(..) {
            // SAFETY: the caller's contract.
            let _ = unsafe { result::module::unload(m.module) };
        }
        self.by_address.clear();
    }
}

impl CudaDevice {
    /// The entry point `kernel` of the module `ptx`, loading the module on first use.
    pub(super) fn function(
        &self,
        kernel: &'static str,
        ptx: &'static str,
    ) -> Result<sys::CUfunction, Error> {
        let mut modules = self.modules.lock().unwrap_or_else(|p| p.into_inner());
        let module = self.module(&mut modules, &format!("kernel `{kernel}`"), ptx)?;
        if let Some(&f) = module.functions.get(kernel) {
            return Ok(f);
        }
        let name = CString::new(kernel).expect("kernel names are identifiers");
        // SAFETY: `module.module` is a live module of this context.
        let f = unsafe { result::module::get_function(module.module, name) }
            .map_err(|e| self.error(&format!("finding kernel `{kernel}` in its PTX module"), e))?;
        module.functions.insert(kernel, f);
        Ok(f)
    }

    /// The function `kernel` of the module `ptx`, allowed `shared` bytes of dynamic shared
    /// memory: past 48 KiB, a GPU launches a function only up to what it was allowed
    /// (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`), which is raised here once per size.
    /// The kernels' static shared arrays live in the dynamic window too, so `shared` is a
    /// block's whole shared memory.
    pub(super) fn function_with_shared(
        &self,
        kernel: &'static str,
        ptx: &'static str,
        shared: usize,
    ) -> Result<sys::CUfunction, Error> {
        let f = self.function(kernel, ptx)?;
        if shared <= OPT_IN_ABOVE {
            return Ok(f);
        }
        let mut opted = self.opted_in.lock().unwrap_or_else(|p| p.into_inner());
        let allowed = opted.entry(f as usize).or_insert(0);
        if *allowed < shared {
            let attr = sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
            // SAFETY: `f` is a live function of this context; the launch was validated against
            // the device's opt-in limit.
            unsafe { result::function::set_function_attribute(f, attr, shared as i32) }.map_err(
                |e| {
                    self.error(
                        &format!("allowing kernel `{kernel}` {shared} bytes of shared memory"),
                        e,
                    )
                },
            )?;
            *allowed = shared;
        }
        Ok(f)
    }

    /// The attributes `attributes` of the function `kernel` of the module `ptx`, as the driver
    /// reports them (`cuFuncGetAttribute`), loading the module on first use.
    pub(crate) fn function_attributes<const N: usize>(
        &self,
        kernel: &'static str,
        ptx: &'static str,
        attributes: [sys::CUfunction_attribute; N],
    ) -> Result<[i32; N], Error> {
        let f = self.function(kernel, ptx)?;
        let mut values = [0; N];
        for (value, attribute) in values.iter_mut().zip(attributes) {
            // SAFETY: `f` is a live function of this context.
            *value =
                unsafe { result::function::get_function_attribute(f, attribute) }.map_err(|e| {
                    self.error(&format!("reading the attributes of kernel `{kernel}`"), e)
                })?;
        }
        Ok(values)
    }

    /// The device address and size of the module-level variable `symbol` of the module `ptx`
    /// (declared as `name`), loading the module on first use.
    pub(crate) fn global(
        &self,
        name: &str,
        symbol: &str,
        ptx: &'static str,
    ) -> Result<(sys::CUdeviceptr, usize), Error> {
        self.bind()?;
        let mut modules = self.modules.lock().unwrap_or_else(|p| p.into_inner());
        let module = self.module(&mut modules, &format!("module array `{name}`"), ptx)?;
        let c_symbol = CString::new(symbol).expect("symbols are identifiers");
        // SAFETY: `module.module` is a live module of this context.
        unsafe { result::module::get_global(module.module, c_symbol) }.map_err(|e| {
            self.error(
                &format!("finding module array `{name}` in its PTX module"),
                e,
            )
        })
    }

    /// The loaded module of the PTX text `ptx` (for `what`, in messages), loading it on first
    /// use. Modules are found by the text's address, and a text at a new address by its
    /// contents: two copies of one crate's PTX must be one module, or a module array set in one
    /// would not be what the kernels of the other read.
    fn module<'m>(
        &self,
        modules: &'m mut Modules,
        what: &str,
        ptx: &'static str,
    ) -> Result<&'m mut Module, Error> {
        let index = match modules.by_address.get(&(ptx.as_ptr() as usize)) {
            Some(&index) => index,
            None => {
                let index = match modules.loaded.iter().position(|m| m.ptx == ptx) {
                    Some(index) => index,
                    None => {
                        modules.loaded.push(self.load(what, ptx)?);
                        modules.loaded.len() - 1
                    }
                };
                modules.by_address.insert(ptx.as_ptr() as usize, index);
                index
            }
        };
        Ok(&mut modules.loaded[index])
    }

    /// Loads the PTX text `ptx` (for `what`, in messages) into this context: as it is, or its
    /// cubin or architecture-specific variant for this GPU, or, where it carries foreign device
    /// code, linked with it (see [`link`]).
    fn load(&self, what: &str, ptx: &'static str) -> Result<Module, Error> {
        let pieces = link::Pieces::of(ptx);
        let (major, minor) = self.compute_capability();
        let cubin = match jit_only() {
            true => None,
            false => pieces.cubin_for(major, minor),
        };
        // PTX the driver compiles keeps its source lines; a cubin and a link have theirs.
        let lines = !pieces.is_linked() && cubin.is_none() && link::has_source_lines(pieces.main);
        let image = if pieces.is_linked() {
            self.linked_image(&pieces)?
        } else if let Some(cubin) = cubin {
            cubin
        } else {
            let variant = pieces.variant_for(major, minor);
            CString::new(variant.as_deref().unwrap_or(pieces.main))
                .map_err(|_| Error::Cuda {
                    op: format!("loading the PTX of {what}"),
                    message: "the PTX text holds a NUL byte".into(),
                })?
                .into_bytes_with_nul()
        };
        // SAFETY: `image` is a NUL-terminated PTX module, a linked image, or a cubin for this
        // GPU's architecture; the driver compiles or loads it.
        let module =
            unsafe { load_image(image.as_ptr() as *const c_void, lines) }.map_err(|e| {
                let refused = is_refused_ptx(e.0);
                let mut err = self.error(&format!("loading the PTX module of {what}"), e);
                if let (true, Error::Cuda { message, .. }) = (refused, &mut err) {
                    message.truncate(message.trim_end_matches('.').len());
                    message.push_str(&self.load_advice(pieces.main));
                }
                err
            })?;
        Ok(Module {
            module,
            ptx,
            functions: HashMap::new(),
        })
    }

    /// The image of a module with foreign pieces: its CUDA C++ compiled by NVRTC for this GPU,
    /// and every piece joined by the driver's linker.
    fn linked_image(&self, pieces: &link::Pieces) -> Result<Vec<u8>, Error> {
        let (major, minor) = self.compute_capability();
        let arch = format!("compute_{major}{minor}");
        let compiled = pieces
            .cuda
            .iter()
            .map(|piece| {
                Ok((
                    piece.name,
                    link::nvrtc_compile(*piece, &pieces.headers, &arch)?,
                ))
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let mut inputs = vec![("the crate's PTX", pieces.main)];
        inputs.extend(pieces.ptx.iter().map(|p| (p.name, p.text)));
        inputs.extend(compiled.iter().map(|(name, ptx)| (*name, ptx.as_str())));
        link::link(&inputs).map_err(|message| {
            let names: Vec<&str> = inputs[1..].iter().map(|(name, _)| *name).collect();
            Error::ForeignCode {
                file: names.join("`, `"),
                message,
            }
        })
    }

    /// This GPU's compute capability (major, minor).
    pub(crate) fn compute_capability(&self) -> (u32, u32) {
        use sys::CUdevice_attribute::*;
        let cc = |attr| self.ctx.attribute(attr).map_or(0, |v| v as u32);
        (
            cc(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
            cc(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR),
        )
    }

    /// What to do about a module the driver refused for its PTX: PTX for a newer GPU than this one must be
    /// built for this one; PTX of an ISA newer than the driver needs a newer driver.
    fn load_advice(&self, ptx: &str) -> String {
        let directive = |name: &str| {
            ptx.lines()
                .find_map(|l| l.trim().strip_prefix(name))
                .map(str::trim)
        };
        let target = link::ptx_target(ptx);
        let gpu = match self.compute_capability() {
            (0, _) => None,
            (major, minor) => Some(10 * major + minor),
        };
        let isa = directive(".version ").unwrap_or("?");
        match (target, gpu) {
            (Some(t), Some(g)) if t > g => format!(
                "; the PTX is for sm_{t} and this GPU is sm_{g}: build it for this GPU with \
                 KERNEL_PTX_ARCH=sm_{g}"
            ),
            (Some(t), _) => format!(
                "; the PTX (ISA {isa}, sm_{t}) suits this GPU, so the driver may be older than \
                 PTX ISA {isa}: update the NVIDIA driver, or build for an older GPU with \
                 KERNEL_PTX_ARCH"
            ),
            (None, _) => "; the PTX names no `.target`".into(),
        }
    }
}

/// Loads a module image (`cuModuleLoadData`); for PTX with source lines, asking the driver's
/// compiler to keep them (`CU_JIT_GENERATE_LINE_INFO`, `ptxas -lineinfo`).
///
/// # Safety
/// `image` is a NUL-terminated PTX module, a linked image or a cubin.
unsafe fn load_image(
    image: *const c_void,
    lines: bool,
) -> Result<sys::CUmodule, cudarc::driver::DriverError> {
    if !lines {
        // SAFETY: the caller's contract.
        return unsafe { result::module::load_data(image) };
    }
    let mut options = [sys::CUjit_option::CU_JIT_GENERATE_LINE_INFO];
    let mut values = [std::ptr::without_provenance_mut::<c_void>(1)];
    let mut module = std::ptr::null_mut();
    // SAFETY: the caller's contract; one option, a flag passed as its value.
    unsafe {
        sys::cuModuleLoadDataEx(
            &mut module,
            image,
            1,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
        )
    }
    .result()?;
    Ok(module)
}
