//! kvbench-plan: the plan every runtime executes byte for byte: the derivation primitives, the
//! keys and values of plan format 2, the plan file, the op streams and the dataset generators.
//! It stands on the model alone.

pub mod derive;
pub mod gen;
pub mod huge;
pub mod opstream;
pub mod planfile;
pub mod primitives;
pub mod replay;

// The files here moved from kvbench-core and keep their `crate::` paths to the model.
use kvbench_model::{input, job, spec};
