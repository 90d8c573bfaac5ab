//! How a command speaks: JSON under `--json`, text otherwise, and failures
//! with the same stable codes as the HTTP API. Under `--json` a failure is
//! the API's error body on stdout (`{"error": {"code", "message",
//! "details"?}}`), so a script reads one JSON document whatever happened;
//! the exit status is 1 either way.

use std::fmt;

use app::wire::{ErrorBody, ErrorDetail};

use crate::http::codes;
use crate::http::error::ApiError;

/// A command's failure, with the stable code the API would give.
#[derive(Debug)]
pub struct CommandError(pub ErrorDetail);

impl CommandError {
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        CommandError(ErrorDetail { code: code.to_owned(), message: message.into(), details: None })
    }

    /// The same failure with `value` (what the command had made of it) as its details.
    pub fn with_details(mut self, value: &impl serde::Serialize) -> Self {
        self.0.details = serde_json::to_value(value).ok();
        self
    }
}

impl fmt::Display for CommandError {
    /// The message and the code and, for `not_answerable`, what is missing,
    /// one reason a line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} [{}]", self.0.message, self.0.code)?;
        for reason in self.0.reasons() {
            write!(f, "\n  - {reason}")?;
        }
        Ok(())
    }
}

impl std::error::Error for CommandError {}

/// An engine or edge error as a command's failure.
pub fn fail(err: impl Into<ApiError>) -> anyhow::Error {
    let err = err.into();
    let (_, code, message) = err.parts();
    anyhow::Error::new(CommandError(ErrorDetail { code: code.to_owned(), message, details: err.details() }))
}

/// A request the operator must fix (`invalid_input`, as the API says it).
pub fn invalid(message: impl Into<String>) -> anyhow::Error {
    CommandError::new(codes::INVALID_INPUT.key, message).into()
}

/// The error body a failed `--json` command prints. A failure that carries
/// no code (the configuration or the database cannot be opened, a file
/// cannot be read) is `internal`, with its whole chain as the message: the
/// operator running the command is the one who must read it.
pub fn error_body(err: &anyhow::Error) -> ErrorBody {
    let error = match err.downcast_ref::<CommandError>() {
        Some(CommandError(detail)) => detail.clone(),
        None => ErrorDetail { code: codes::INTERNAL.key.into(), message: format!("{err:#}"), details: None },
    };
    ErrorBody { error }
}

pub fn print_json(value: &impl serde::Serialize) {
    println!("{}", serde_json::to_string_pretty(value).unwrap_or_default());
}
