//! The runtime's names that the macro recognises in a kernel's body and signature, in one
//! place: a name the runtime adds or renames is added or renamed here.

/// Methods of the thread's context: they read it and change nothing.
pub(crate) const CONTEXT_METHODS: &[&str] = &[
    "thread_idx",
    "block_idx",
    "block_dim",
    "grid_dim",
    "grid_1d",
    "grid_2d",
    "grid_3d",
    "gridsize_1d",
    "gridsize_2d",
    "gridsize_3d",
    "lane_id",
    "lanemask_lt",
];

/// Methods of numbers (and arrays' extents) that compute a value from their receiver and
/// arguments alone.
pub(crate) const NUMBER_METHODS: &[&str] = &[
    "min",
    "max",
    "abs",
    "clamp",
    "div_ceil",
    "pow",
    "trailing_zeros",
    "leading_zeros",
    "count_ones",
    "next_power_of_two",
    "is_power_of_two",
    "wrapping_add",
    "wrapping_sub",
    "wrapping_mul",
    "len",
    "dim",
    "shape",
    "is_empty",
];

/// The warp collectives, whose lanes meet, and `activemask()`, which asks which lanes have not
/// returned: the CPU backend splits a kernel at its collectives (see `lockstep`) or runs it as
/// coroutines, as it does a kernel with barriers.
pub(crate) const WARP_COLLECTIVES: &[&str] = &[
    "shfl_sync",
    "shfl_up_sync",
    "shfl_down_sync",
    "shfl_xor_sync",
    "ballot_sync",
    "all_sync",
    "any_sync",
    "eq_sync",
    "match_any_sync",
    "match_all_sync",
    "syncwarp",
    "activemask",
];

/// Warp collectives the macro does not take apart: a kernel that calls one runs its threads as
/// coroutines on the CPU backend, never split into thread loops. The warpgroup's (`wgmma::`)
/// meet as each warp's lanes; `shfl_down_words` (`#[reduce]`'s) is a shuffle per word.
pub(crate) const OPAQUE_COLLECTIVES: &[&str] = &[
    "shfl_down_words",
    "mma_sync",
    "ldmatrix_sync",
    "mma_async",
    "fence",
    "commit_group",
    "wait_group",
];

/// Calls that need a GPU of sm_80 or later, and the instruction each runs there: a kernel or
/// device function that makes one fails to build for an older GPU, at the call.
pub(crate) const SM80_CALLS: &[(&str, &str)] = &[
    ("mma_sync", "its tensor cores' mma.sync.m16n8k16"),
    ("ldmatrix_sync", "ldmatrix"),
    ("memcpy_async", "cp.async"),
    ("memcpy_async_tile", "cp.async"),
    ("pipeline_commit", "cp.async.commit_group"),
    ("pipeline_wait_prior", "cp.async.wait_group"),
];

/// The bytes of the element types whose size the macro knows, for the sizes of `memcpy_async`'s
/// copies (4, 8 or 16 bytes).
pub(crate) const ELEMENT_BYTES: &[(&str, usize)] = &[
    ("u8", 1),
    ("i8", 1),
    ("u16", 2),
    ("i16", 2),
    ("f16", 2),
    ("bf16", 2),
    ("u32", 4),
    ("i32", 4),
    ("f32", 4),
    ("u64", 8),
    ("i64", 8),
    ("f64", 8),
];

/// The grid of a cooperative launch and its barrier: a kernel that calls either is cooperative.
pub(crate) const GRID_CALLS: &[&str] = &["this_grid", "grid_sync"];

pub(crate) const STD_MACROS: &[&str] = &[
    "println",
    "print",
    "eprintln",
    "eprint",
    "format",
    "vec",
    "dbg",
    "format_args_nl",
];

pub(crate) const FLOAT_METHODS: &[&str] = &[
    "sqrt",
    "cbrt",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "atan2",
    "sinh",
    "cosh",
    "tanh",
    "exp",
    "exp2",
    "exp_m1",
    "ln",
    "log2",
    "log10",
    "ln_1p",
    "powf",
    "powi",
    "floor",
    "ceil",
    "round",
    "round_ties_even",
    "trunc",
    "abs",
    "mul_add",
    "min",
    "max",
    "hypot",
    "copysign",
    "erf",
    "erfc",
];

pub(crate) const HEAP_PATHS: &[&str] = &[
    "Vec", "String", "Box", "Rc", "Arc", "HashMap", "HashSet", "BTreeMap", "BTreeSet", "VecDeque",
];

pub(crate) const PRIMITIVES: &[&str] = &[
    "i8", "i16", "i32", "i64", "isize", "u8", "u16", "u32", "u64", "usize", "f32", "f64", "bool",
];

pub(crate) const HEAP_TYPES: &[&str] = &[
    "Vec", "String", "Box", "Rc", "Arc", "HashMap", "HashSet", "BTreeMap", "BTreeSet", "VecDeque",
    "Cow",
];

pub(crate) const ARRAY_TYPES: &[(&str, usize)] = &[
    ("Array0", 0),
    ("ArrayView0", 0),
    ("ArrayViewMut0", 0),
    ("View0", 0),
    ("View0Mut", 0),
    ("Array1", 1),
    ("ArrayView1", 1),
    ("ArrayViewMut1", 1),
    ("View1", 1),
    ("View1Mut", 1),
    ("Array2", 2),
    ("ArrayView2", 2),
    ("ArrayViewMut2", 2),
    ("View2", 2),
    ("View2Mut", 2),
    ("Array3", 3),
    ("ArrayView3", 3),
    ("ArrayViewMut3", 3),
    ("View3", 3),
    ("View3Mut", 3),
];

/// What the names of the atomic operations (`atomic_add`, `atomic_max`, ...) begin with.
pub(crate) const ATOMIC_PREFIX: &str = "atomic_";

/// What the names of the random-number functions (`xoroshiro128p_uniform_f32`, ...) begin
/// with: they read only the states they are given, never the thread's coordinates.
pub(crate) const RANDOM_PREFIX: &str = "xoroshiro128p_";

/// The runtime's constructors of shared arrays (`__rt::shared_array1`, ...): what the body pass
/// writes `shared_array!` and `dynamic_shared!` as.
pub(crate) const SHARED_ARRAYS: &[&str] = &[
    "shared_array1",
    "shared_array2",
    "shared_array3",
    "shared_bools1",
    "shared_bools2",
    "shared_bools3",
    "dynamic_shared",
];
