//! Coroutine stacks: their size ([`stack_size`]), their guard page ([`guard_at`]), and an
//! overflow as a kernel fault naming `KERNEL_CPU_STACK_KIB`, never a silent crash.
//!
//! Threads that run as coroutines ([`fibers`](super::fibers)) each have a stack of their own
//! with a guard page below it, so a thread whose frames outgrow its stack faults on the guard
//! page before it writes anything past the stack. A `SIGSEGV` handler installed with the first
//! coroutines recognises a fault in the guard page of the coroutine the worker is running, and
//! makes that coroutine, on a fresh start of its own stack, raise the kernel fault that tells
//! which thread overflowed and which `KERNEL_CPU_STACK_KIB` would give it more room; the launch
//! then returns it as an error like any other fault. Every other fault goes to the handler that
//! was there before (the standard library's, which reports overflows of the worker's own stack).
//!
//! Written by hand on `libc`'s `sigaction` and corosensei's trap support, which exist for this:
//! no crate turns a guard-page fault in a coroutine into a Rust panic.
//!
//! The overflowing thread's frames are discarded without running their destructors; the
//! kernel's locals are plain device data, so nothing is lost but the launch, which fails.

use corosensei::trap::CoroutineTrapHandler;
use std::cell::Cell;

/// The default stack of a simulated thread: CUDA's limit of a thread's local memory (512 KiB),
/// and as much again for the frames around it (debug builds copy large locals). Only the pages
/// a thread touches take memory.
const DEFAULT_STACK_KIB: usize = 1024;

/// The bytes of each simulated thread's stack: `KERNEL_CPU_STACK_KIB`, or the default.
pub(crate) fn stack_size() -> usize {
    static SIZE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *SIZE.get_or_init(|| {
        std::env::var("KERNEL_CPU_STACK_KIB")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(DEFAULT_STACK_KIB)
            .saturating_mul(1024)
    })
}

/// The guard page of a stack whose mapping starts at `limit` (corosensei's limit includes it).
pub(crate) fn guard_at(limit: usize) -> (usize, usize) {
    static PAGE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let page = *PAGE.get_or_init(|| {
        #[cfg(target_os = "linux")]
        // SAFETY: `sysconf` only reads a system setting.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        #[cfg(not(target_os = "linux"))]
        let page = 4096;
        usize::try_from(page).unwrap_or(4096)
    });
    (limit, limit.saturating_add(page))
}

/// The coroutine the worker is running, and its guard page (`[low, high)`).
#[derive(Clone, Copy)]
pub(crate) struct Guarded {
    pub(crate) trap: CoroutineTrapHandler<()>,
    pub(crate) low: usize,
    pub(crate) high: usize,
}

thread_local! {
    /// Read by the signal handler: a `const` cell of a `Copy` type, with no lazy initialisation
    /// and no destructor, so reading it there touches nothing but the thread's own memory.
    static RUNNING: Cell<Option<Guarded>> = const { Cell::new(None) };
}

/// The worker runs a guarded coroutine while this lives: made before `resume`, dropped when it
/// returns or unwinds.
pub(crate) struct Running(());

impl Running {
    /// Marks `guarded` as the coroutine the worker resumes next.
    #[inline]
    pub(crate) fn enter(guarded: Guarded) -> Running {
        RUNNING.with(|r| r.set(Some(guarded)));
        Running(())
    }
}

impl Drop for Running {
    #[inline]
    fn drop(&mut self) {
        RUNNING.with(|r| r.set(None));
    }
}

/// Installs the handler once per process, and an alternate signal stack on this worker if it
/// has none (the handler cannot run on the stack that overflowed).
pub(crate) fn install() {
    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    imp::install();
}

/// Stops the thread whose stack overflowed; runs on that thread's coroutine stack, restarted.
#[cold]
fn overflowed() {
    let kib = stack_size() / 1024;
    super::super::fault::raise_with_coordinates(format!(
        "a simulated thread overflowed its {kib} KiB stack: kernels whose barriers or warp \
         collectives run as coroutines give each thread a stack of its own; run with \
         KERNEL_CPU_STACK_KIB={} or more",
        (kib * 2).max(64)
    ))
}

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod imp {
    use super::{overflowed, RUNNING};
    use std::cell::Cell;
    use std::sync::OnceLock;

    /// The handler that was there before ours.
    static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();

    thread_local! {
        static ALTERNATE_STACK: Cell<bool> = const { Cell::new(false) };
    }

    /// Bytes of the alternate signal stacks this module gives workers that have none.
    const ALTERNATE_BYTES: usize = 64 * 1024;

    pub(super) fn install() {
        PREVIOUS.get_or_init(|| {
            // SAFETY: a zeroed `sigaction` is a valid value to fill; `on_fault` has the
            // `SA_SIGINFO` signature; the previous action is read back into `previous`.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_fault as *const () as usize;
                action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut action.sa_mask);
                let mut previous: libc::sigaction = std::mem::zeroed();
                libc::sigaction(libc::SIGSEGV, &action, &mut previous);
                previous
            }
        });
        if ALTERNATE_STACK.with(|a| a.replace(true)) {
            return;
        }
        // SAFETY: `sigaltstack` reads the current alternate stack into `current`; a new one is
        // set only where there is none, on memory leaked for the rest of the thread's life.
        unsafe {
            let mut current: libc::stack_t = std::mem::zeroed();
            libc::sigaltstack(std::ptr::null(), &mut current);
            if current.ss_flags & libc::SS_DISABLE != 0 {
                let memory = Box::leak(vec![0u8; ALTERNATE_BYTES].into_boxed_slice());
                let stack = libc::stack_t {
                    ss_sp: memory.as_mut_ptr().cast(),
                    ss_flags: 0,
                    ss_size: ALTERNATE_BYTES,
                };
                libc::sigaltstack(&stack, std::ptr::null_mut());
            }
        }
    }

    /// The `SIGSEGV` handler: a fault in the running coroutine's guard page restarts that
    /// coroutine in [`overflowed`]; any other goes back to the previous handler.
    extern "C" fn on_fault(
        signal: libc::c_int,
        info: *mut libc::siginfo_t,
        context: *mut libc::c_void,
    ) {
        // SAFETY: the kernel passes a valid `siginfo_t` and `ucontext_t` to an `SA_SIGINFO`
        // handler; the coroutine's handler is used only while the coroutine lives (the worker
        // clears it when `resume` returns), with the stack pointer in its bounds, and the
        // registers it names are written back into the interrupted context as it requires.
        unsafe {
            let address = (*info).si_addr() as usize;
            let uc = context as *mut libc::ucontext_t;
            let running = RUNNING.with(|r| r.get());
            match running {
                Some(g)
                    if g.low <= address
                        && address < g.high
                        && g.trap.stack_ptr_in_bounds(sp(uc)) =>
                {
                    RUNNING.with(|r| r.set(None));
                    let regs = g.trap.setup_trap_handler(overflowed);
                    redirect(uc, &regs);
                }
                _ => {
                    // Not ours: the previous handler takes the fault when it comes again.
                    if let Some(previous) = PREVIOUS.get() {
                        libc::sigaction(signal, previous, std::ptr::null_mut());
                    }
                }
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn sp(uc: *mut libc::ucontext_t) -> usize {
        // SAFETY: the caller's `uc` is the interrupted context.
        unsafe { (*uc).uc_mcontext.gregs[libc::REG_RSP as usize] as usize }
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn redirect(uc: *mut libc::ucontext_t, regs: &corosensei::trap::TrapHandlerRegs) {
        // SAFETY: the caller's `uc` is the interrupted context.
        let gregs = unsafe { &mut (*uc).uc_mcontext.gregs };
        gregs[libc::REG_RIP as usize] = regs.rip as i64;
        gregs[libc::REG_RSP as usize] = regs.rsp as i64;
        gregs[libc::REG_RBP as usize] = regs.rbp as i64;
        gregs[libc::REG_RDI as usize] = regs.rdi as i64;
        gregs[libc::REG_RSI as usize] = regs.rsi as i64;
    }

    #[cfg(target_arch = "aarch64")]
    unsafe fn sp(uc: *mut libc::ucontext_t) -> usize {
        // SAFETY: the caller's `uc` is the interrupted context.
        unsafe { (*uc).uc_mcontext.sp as usize }
    }

    #[cfg(target_arch = "aarch64")]
    unsafe fn redirect(uc: *mut libc::ucontext_t, regs: &corosensei::trap::TrapHandlerRegs) {
        // SAFETY: the caller's `uc` is the interrupted context.
        let m = unsafe { &mut (*uc).uc_mcontext };
        m.pc = regs.pc;
        m.sp = regs.sp;
        m.regs[0] = regs.x0;
        m.regs[1] = regs.x1;
        m.regs[29] = regs.x29;
        m.regs[30] = regs.lr;
    }
}
