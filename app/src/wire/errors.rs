//! The one error shape of every JSON endpoint.

use serde::{Deserialize, Serialize};

/// The error body of every JSON endpoint:
/// `{"error": {"code": "...", "message": "...", "details": {...}}}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct ErrorDetail {
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<serde_json::Value>,
}

impl ErrorDetail {
    /// What a `not_answerable` error lists as missing (`details.reasons`).
    pub fn reasons(&self) -> Vec<String> {
        let listed = self.details.as_ref().and_then(|d| d.get("reasons")).and_then(|r| r.as_array());
        listed
            .map(|list| list.iter().filter_map(|r| r.as_str().map(str::to_owned)).collect())
            .unwrap_or_default()
    }

    /// The error as the console shows it: the message, the stable code and,
    /// when it lists them, what is missing.
    pub fn shown(&self) -> String {
        let reasons = self.reasons();
        if reasons.is_empty() {
            format!("{} ({})", self.message, self.code)
        } else {
            format!("{} ({}): {}", self.message, self.code, reasons.join(" "))
        }
    }
}
