//! Lore's ground floor, the records and settings every other floor stands
//! on (ARCHITECTURE.md, "Crates and floors"): what the settings are, the
//! admin-record database and its cluster row, the keys derived from the
//! master key, the audit log, an answer's trace, the in-memory log book and
//! the download of model files. Nothing here knows about providers, the
//! corpus, answers or the tool server, and the compiler keeps it so: this
//! crate depends on no other Lore crate but the schema.

pub mod audit;
pub mod error;
pub mod fetch;
pub mod logbook;
pub mod secrets;
pub mod settings;
pub mod store;
pub mod trace;

pub use error::{Error, Result};
pub use settings::Settings;
