// A type of the user's cannot be addressed for atomics: `ElementPtr` is the views' alone, as
// the atomics write through the pointer it gives.
use kernel_runtime::prelude::*;
use kernel_runtime::view::ElementPtr;

struct Anywhere;

impl ElementPtr<usize> for Anywhere {
    type Elem = u32;
    fn element_ptr(&self, _index: usize) -> *mut u32 {
        std::ptr::null_mut()
    }
}

fn main() {
    atomic_add(&Anywhere, 0, 1u32);
}
