//! The engine's unit tests, one module per source module tested. They live
//! in this binary rather than in the library because a library with unit
//! tests is compiled twice, and `engine` is the crate a change in the answer
//! pipeline recompiles: see `docs/decisions.md`, "One test binary per floor".

mod answer;
mod answer_cache;
mod answer_feedback;
mod answer_gaps;
mod answer_verify;
mod evals;
mod keys;
mod oauth_documents;
mod oauth_flow;
mod operations;
mod readiness;
