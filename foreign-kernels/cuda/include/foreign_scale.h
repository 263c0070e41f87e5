// The scale that cuda/mul.cu applies: a header from an include directory of its own, which
// build.rs names with `include_dir`.
#pragma once
#define FOREIGN_SCALE 0.5f
