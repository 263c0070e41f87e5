//! [`ReduceOp`]: how an all-reduce combines the ranks' elements.

/// How [`Cluster::all_reduce`](super::cluster::Cluster::all_reduce) combines the ranks' elements (MPI's `MPI_SUM`, `MPI_PROD`,
/// `MPI_MAX`, `MPI_MIN`; NCCL's likewise).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    /// The sum.
    Sum,
    /// The product.
    Prod,
    /// The greatest.
    Max,
    /// The least.
    Min,
}
