//! Provider types: each preset's label, default endpoint, placement,
//! protocol and the capabilities its models may have.

use super::*;

/// A provider type: its label, default endpoint, where it runs, the
/// protocol it speaks and what its models can do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Preset {
    pub key: &'static str,
    pub name: &'static str,
    /// `None` for `custom`: the endpoint must be given.
    pub endpoint: Option<&'static str>,
    /// `None` for `custom`: either, by the endpoint's host.
    pub placement: Option<Placement>,
    pub needs_key: bool,
    pub protocol: Protocol,
    /// The capabilities its targets may have.
    pub capabilities: &'static [Capability],
}

pub(super) const ALL_CAPABILITIES: &[Capability] =
    &[Capability::Generation, Capability::Embedding, Capability::Rerank];
pub(super) const GENERATION_ONLY: &[Capability] = &[Capability::Generation];

pub static PRESETS: [Preset; 15] = [
    Preset {
        key: embedded::KIND,
        name: "Embedded (on this machine)",
        endpoint: Some(embedded::ENDPOINT),
        placement: Some(Placement::OnNode),
        needs_key: false,
        protocol: Protocol::OpenAi,
        capabilities: GENERATION_ONLY,
    },
    Preset {
        key: "openai",
        name: "OpenAI",
        endpoint: Some("https://api.openai.com/v1"),
        placement: Some(Placement::OffNode),
        needs_key: true,
        protocol: Protocol::OpenAi,
        capabilities: ALL_CAPABILITIES,
    },
    Preset {
        key: "anthropic",
        name: "Anthropic",
        endpoint: Some("https://api.anthropic.com/v1"),
        placement: Some(Placement::OffNode),
        needs_key: true,
        protocol: Protocol::Anthropic,
        capabilities: GENERATION_ONLY,
    },
    Preset {
        key: "gemini",
        name: "Google Gemini",
        endpoint: Some("https://generativelanguage.googleapis.com/v1beta"),
        placement: Some(Placement::OffNode),
        needs_key: true,
        protocol: Protocol::Gemini,
        capabilities: &[Capability::Generation, Capability::Embedding],
    },
    Preset {
        key: "groq",
        name: "Groq",
        endpoint: Some("https://api.groq.com/openai/v1"),
        placement: Some(Placement::OffNode),
        needs_key: true,
        protocol: Protocol::OpenAi,
        capabilities: ALL_CAPABILITIES,
    },
    Preset {
        key: "together",
        name: "Together AI",
        endpoint: Some("https://api.together.xyz/v1"),
        placement: Some(Placement::OffNode),
        needs_key: true,
        protocol: Protocol::OpenAi,
        capabilities: ALL_CAPABILITIES,
    },
    Preset {
        key: "mistral",
        name: "Mistral AI",
        endpoint: Some("https://api.mistral.ai/v1"),
        placement: Some(Placement::OffNode),
        needs_key: true,
        protocol: Protocol::OpenAi,
        capabilities: ALL_CAPABILITIES,
    },
    Preset {
        key: "deepseek",
        name: "DeepSeek",
        endpoint: Some("https://api.deepseek.com/v1"),
        placement: Some(Placement::OffNode),
        needs_key: true,
        protocol: Protocol::OpenAi,
        capabilities: ALL_CAPABILITIES,
    },
    Preset {
        key: "openrouter",
        name: "OpenRouter",
        endpoint: Some("https://openrouter.ai/api/v1"),
        placement: Some(Placement::OffNode),
        needs_key: true,
        protocol: Protocol::OpenAi,
        capabilities: ALL_CAPABILITIES,
    },
    Preset {
        key: "ollama",
        name: "Ollama",
        endpoint: Some("http://127.0.0.1:11434/v1"),
        placement: Some(Placement::OnNode),
        needs_key: false,
        protocol: Protocol::OpenAi,
        capabilities: ALL_CAPABILITIES,
    },
    Preset {
        key: "llama_cpp",
        name: "llama.cpp server",
        endpoint: Some("http://127.0.0.1:8080/v1"),
        placement: Some(Placement::OnNode),
        needs_key: false,
        protocol: Protocol::OpenAi,
        capabilities: ALL_CAPABILITIES,
    },
    Preset {
        key: "vllm",
        name: "vLLM",
        endpoint: Some("http://127.0.0.1:8000/v1"),
        placement: Some(Placement::OnNode),
        needs_key: false,
        protocol: Protocol::OpenAi,
        capabilities: ALL_CAPABILITIES,
    },
    Preset {
        key: "lm_studio",
        name: "LM Studio",
        endpoint: Some("http://127.0.0.1:1234/v1"),
        placement: Some(Placement::OnNode),
        needs_key: false,
        protocol: Protocol::OpenAi,
        capabilities: ALL_CAPABILITIES,
    },
    Preset {
        key: "localai",
        name: "LocalAI",
        endpoint: Some("http://127.0.0.1:8080/v1"),
        placement: Some(Placement::OnNode),
        needs_key: false,
        protocol: Protocol::OpenAi,
        capabilities: ALL_CAPABILITIES,
    },
    Preset {
        key: "custom",
        name: "Custom (OpenAI-compatible)",
        endpoint: None,
        placement: None,
        needs_key: false,
        protocol: Protocol::OpenAi,
        capabilities: ALL_CAPABILITIES,
    },
];

pub fn preset(key: &str) -> Result<&'static Preset> {
    PRESETS.iter().find(|p| p.key == key).ok_or_else(|| {
        let known: Vec<&str> = PRESETS.iter().map(|p| p.key).collect();
        invalid(format!("unknown provider type `{key}` ({})", known.join(", ")))
    })
}
