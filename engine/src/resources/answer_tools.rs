//! The built-in `lore` resource: the answer pipeline as the custom tools
//! `answer`, `rate_answer` and `retrieve`, listed to and run for the
//! callers whose key carries their scope (or who signed in over OAuth).

use super::*;

/// Lore's own resource: the answer pipeline as the custom tools `answer`
/// and `retrieve`, offered to (and run for) a caller signed in over OAuth
/// or whose key carries the tool's scope.
pub struct LoreResource;

#[derive(Deserialize, schemars::JsonSchema)]
pub(super) struct AnswerToolArgs {
    /// The question, in the user's words.
    pub(super) question: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub(super) struct RateToolArgs {
    /// The `trace.id` of an answer this session's caller was given.
    pub(super) trace_id: String,
    /// Whether the answer (or refusal) helped.
    pub(super) helpful: bool,
    /// What was wrong or missing, in at most 1000 characters.
    #[serde(default)]
    pub(super) comment: Option<String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub(super) struct RetrieveToolArgs {
    /// What to search the indexed content for.
    pub(super) query: String,
    /// How many passages (default: the active profile's).
    #[serde(default)]
    #[schemars(with = "u32")]
    pub(super) top_k: Option<usize>,
}

pub(super) fn tool_schema<T: schemars::JsonSchema>() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null);
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
        object.remove("title");
    }
    schema
}

pub(super) fn tool_args<T: serde::de::DeserializeOwned>(tool: &str, args: Value) -> Result<T> {
    serde_json::from_value(args).map_err(|err| AppDbError::Invalid(format!("{tool}: {err}")).into())
}

#[async_trait]
impl Resource for LoreResource {
    fn verbs(&self) -> Vec<Verb> {
        Vec::new()
    }

    fn tools(&self) -> Vec<CustomTool> {
        vec![
            CustomTool {
                name: "answer".into(),
                method: "answer".into(),
                description: "Answers a question from the indexed content, with citations and, for each statement, the sentence of its passage that says it; refuses when nothing retrievable answers it, listing the passages that may be related. Needs a key with the `answer` scope, or an OAuth sign-in.".into(),
                input_schema: tool_schema::<AnswerToolArgs>(),
            },
            CustomTool {
                name: "rate_answer".into(),
                method: "rate_answer".into(),
                description: "Rates an answer the `answer` tool gave this caller as helpful or not, by its trace id, with an optional comment; a second rating of the same answer replaces the first. Needs a key with the `answer` scope, or an OAuth sign-in.".into(),
                input_schema: tool_schema::<RateToolArgs>(),
            },
            CustomTool {
                name: "retrieve".into(),
                method: "retrieve".into(),
                description: "The passages of the indexed content that best match a query (hybrid retrieval), with scores. Needs a key with the `retrieve` scope, or an OAuth sign-in.".into(),
                input_schema: tool_schema::<RetrieveToolArgs>(),
            },
        ]
    }

    /// Listed only to a caller whose call would run: one signed in over
    /// OAuth, or whose key carries the tool's scope (an `mcp`-only key
    /// does not see them).
    async fn offers_tool(&self, lore: &Lore, caller: &Caller, tool: &CustomTool) -> bool {
        let Some(scope) = scope_of(&tool.method) else { return false };
        over_oauth(caller) || crate::keys::carries(lore, caller.key.as_ref().map(Secret::expose), scope).await
    }

    async fn call_tool(&self, envelope: &mut Envelope<'_>, method: &str, args: Value) -> Result<ToolOutput> {
        let (lore, caller) = (envelope.lore(), envelope.caller());
        // The tool server read the generation at the start of this request,
        // so the key may come from what is held (a revocation still counts).
        let raw = caller.key.as_ref().map(Secret::expose);
        match method {
            "answer" => {
                let key_id = tool_key(lore, caller, raw, crate::keys::Scope::Answer).await?;
                let a: AnswerToolArgs = tool_args("answer", args)?;
                let by =
                    crate::answer::feedback::Asked::of_caller(key_id.as_deref(), caller.principal.as_ref());
                let ask = crate::answer::Ask {
                    question: a.question,
                    surface: crate::answer::Surface::Mcp,
                    key_id,
                    asker: asker(caller),
                    by,
                };
                Ok(ToolOutput::Answer(Box::new(crate::answer::answer(lore, ask).await?)))
            }
            "rate_answer" => {
                let key_id = tool_key(lore, caller, raw, crate::keys::Scope::Answer).await?;
                let a: RateToolArgs = tool_args("rate_answer", args)?;
                let by =
                    crate::answer::feedback::Asked::of_caller(key_id.as_deref(), caller.principal.as_ref());
                let rating = crate::answer::feedback::Rating {
                    trace_id: a.trace_id,
                    helpful: a.helpful,
                    comment: a.comment,
                };
                Ok(ToolOutput::Rated(crate::answer::feedback::rate(lore, &by, rating).await?))
            }
            "retrieve" => {
                tool_key(lore, caller, raw, crate::keys::Scope::Retrieve).await?;
                let a: RetrieveToolArgs = tool_args("retrieve", args)?;
                Ok(ToolOutput::Retrieved(
                    crate::asker::retrieve(lore, &asker(caller), &a.query, a.top_k).await?,
                ))
            }
            other => {
                Err(AppDbError::Invalid(format!("the `lore` resource has no tool method `{other}`")).into())
            }
        }
    }
}

/// Runs the custom tool `name` of the resource at `path` in its envelope.
pub async fn call_tool(
    lore: &Lore,
    caller: &Caller,
    path: &str,
    name: &str,
    args: Value,
) -> Result<ToolOutput> {
    let entry = registry(lore)
        .await?
        .entry(path)
        .ok_or_else(|| crate::Error::from(AppDbError::UnknownResource(path.to_owned())))?;
    let tool = entry
        .resource
        .tools()
        .into_iter()
        .find(|tool| tool.name == name)
        .ok_or_else(|| AppDbError::Invalid(format!("the resource `{path}` has no tool `{name}`")))?;
    // Run in its envelope: committed only when the method succeeds (an
    // envelope dropped on an error rolls its transaction back).
    let mut envelope = Envelope::new(lore, caller, entry.resource.as_ref());
    let output = entry.resource.call_tool(&mut envelope, &tool.method, args).await?;
    envelope.commit().await?;
    Ok(output)
}

/// The key scope each tool method needs.
fn scope_of(method: &str) -> Option<crate::keys::Scope> {
    match method {
        "answer" | "rate_answer" => Some(crate::keys::Scope::Answer),
        "retrieve" => Some(crate::keys::Scope::Retrieve),
        _ => None,
    }
}

/// Signed in over OAuth (no key): the token's tool-server scope brings the
/// custom tools with it (`oauth::SCOPES`).
fn over_oauth(caller: &Caller) -> bool {
    caller.key.is_none() && caller.oauth && caller.principal.is_some()
}

/// The key a custom tool is called with, which must have `scope`; none for
/// a caller signed in over OAuth.
async fn tool_key(
    lore: &Lore,
    caller: &Caller,
    raw: Option<&str>,
    scope: crate::keys::Scope,
) -> Result<Option<String>> {
    if over_oauth(caller) {
        return Ok(None);
    }
    Ok(Some(crate::keys::authenticate_cached(lore, raw, scope, None).await?.key_id))
}

/// The session's user reads; a session without one reads what everyone may.
fn asker(caller: &Caller) -> crate::asker::Asker {
    match &caller.principal {
        Some(principal) => crate::asker::Asker::Principal(principal.clone()),
        None => crate::asker::Asker::Public,
    }
}
