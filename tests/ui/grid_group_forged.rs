// A `GridGroup` comes from `this_grid()` in a cooperative kernel only: safe code cannot make one.
use kernel_runtime::GridGroup;

fn main() {
    let g = GridGroup { _thread: core::marker::PhantomData };
    g.sync();
}
