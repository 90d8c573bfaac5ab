//! Provider accounts: an endpoint and its sealed API key, checked, stored,
//! changed and deleted; the one chat call every generation goes through.

use super::*;

/// What an account is made from. For an edit, `api_key: None` (or blank)
/// keeps the stored key and a value rotates it.
#[derive(Clone, Debug, Default)]
pub struct AccountInput {
    pub name: Option<String>,
    pub kind: String,
    pub placement: Option<String>,
    pub endpoint: Option<String>,
    pub api_key: Option<Secret>,
}

pub(super) fn is_loopback_or_private(host: &url::Host<&str>) -> bool {
    match host {
        url::Host::Domain(name) => *name == "localhost" || name.ends_with(".localhost"),
        url::Host::Ipv4(ip) => ip.is_loopback() || ip.is_private() || ip.is_link_local(),
        url::Host::Ipv6(ip) => ip.is_loopback(),
    }
}

/// Checks the type, endpoint, placement and key of an account.
pub(super) fn resolve_account(input: &AccountInput) -> Result<(&'static Preset, String, Placement)> {
    check_api_key(&input.api_key)?;
    let preset = preset(input.kind.trim())?;
    if preset.key == embedded::KIND {
        // Nothing to reach: the model runs in this process.
        if input.placement.as_deref().is_some_and(|p| !p.trim().is_empty() && p.trim() != "on_node") {
            return Err(invalid(format!("{} is on-node only", preset.name)));
        }
        return Ok((preset, embedded::ENDPOINT.to_owned(), Placement::OnNode));
    }
    let endpoint = match input.endpoint.as_deref().map(str::trim).filter(|e| !e.is_empty()) {
        Some(given) => given.trim_end_matches('/').to_owned(),
        None => preset
            .endpoint
            .ok_or_else(|| {
                invalid(
                    "a custom provider needs its endpoint (the API base, like http://host:port/v1)".into(),
                )
            })?
            .to_owned(),
    };
    let url = url::Url::parse(&endpoint).map_err(|_| invalid(format!("`{endpoint}` is not a URL")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(invalid(format!("`{endpoint}` must be an http or https URL")));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(invalid("put the API key in the key field, not in the endpoint URL".into()));
    }
    let local = url.host().is_some_and(|host| is_loopback_or_private(&host));
    let placement =
        match (input.placement.as_deref().map(str::trim).filter(|p| !p.is_empty()), preset.placement) {
            (Some(raw), Some(fixed)) => {
                let asked = Placement::parse(raw)?;
                if asked != fixed {
                    return Err(invalid(format!(
                        "{} is {} only",
                        preset.name,
                        fixed.key().replace('_', "-")
                    )));
                }
                fixed
            }
            (None, Some(fixed)) => fixed,
            (Some(raw), None) => Placement::parse(raw)?,
            (None, None) => {
                if local {
                    Placement::OnNode
                } else {
                    Placement::OffNode
                }
            }
        };
    Ok((preset, endpoint, placement))
}

pub(super) fn non_blank(secret: &Option<Secret>) -> Option<&Secret> {
    secret.as_ref().filter(|s| !s.expose().trim().is_empty())
}

/// Refuses a key that cannot be sent as it is, before it is stored or any
/// call is made: the key goes into an HTTP header, where a control character
/// (a NUL, a line break inside the key) cannot go, and no provider issues a
/// key outside printable ASCII. Without this the probe fails while building
/// its request and a typing mistake reads as the provider's failure. The key
/// is trimmed first, as it is when used, so a pasted trailing newline is
/// fine; the message never repeats the key.
pub(super) fn check_api_key(secret: &Option<Secret>) -> Result<()> {
    match non_blank(secret) {
        Some(key) if !key.expose().trim().chars().all(|c| c == ' ' || c.is_ascii_graphic()) => {
            Err(Error::InvalidInput(
                "an API key can hold only printable ASCII characters, and no control characters".into(),
            ))
        }
        _ => Ok(()),
    }
}

/// Stores a new account (its key sealed).
pub async fn create_account(lore: &Corpus, actor: &Actor, input: AccountInput) -> Result<Account> {
    Account::decode(create_account_in(lore, &lore.db, actor, input).await?)
}

pub(super) async fn create_account_in(
    lore: &Corpus,
    db: &impl sea_orm::ConnectionTrait,
    actor: &Actor,
    input: AccountInput,
) -> Result<provider_account::Model> {
    let (preset, endpoint, placement) = resolve_account(&input)?;
    let key = non_blank(&input.api_key);
    if preset.needs_key && key.is_none() {
        return Err(invalid(format!("{} needs an API key", preset.name)));
    }
    let name = match input.name.as_deref().map(str::trim).filter(|n| !n.is_empty()) {
        Some(name) if name.chars().count() <= 100 => name.to_owned(),
        Some(_) => return Err(invalid("an account name has at most 100 characters".into())),
        None => preset.name.to_owned(),
    };
    let now = Utc::now();
    let row = provider_account::ActiveModel {
        id: Set(uuid::Uuid::new_v4().to_string()),
        name: Set(name),
        kind: Set(preset.key.to_owned()),
        placement: Set(placement.key().to_owned()),
        endpoint: Set(endpoint),
        api_key_sealed: Set(key.map(|k| lore.keys.seal(k.expose().trim())).transpose()?),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(db)
    .await?;
    audit::record(
        db,
        actor,
        "provider.account_created",
        Some(&row.id),
        serde_json::json!({"kind": row.kind}),
    )
    .await?;
    Ok(row)
}

/// Edits an account. A blank key keeps the stored one; a value rotates it.
pub async fn update_account(lore: &Corpus, actor: &Actor, id: &str, input: AccountInput) -> Result<Account> {
    let account = account_row(lore, id).await?;
    let (_, endpoint, placement) = resolve_account(&input)?;
    let rotated = non_blank(&input.api_key).is_some();
    let mut row: provider_account::ActiveModel = account.clone().into();
    if let Some(name) = input.name.as_deref().map(str::trim).filter(|n| !n.is_empty()) {
        row.name = Set(name.chars().take(100).collect());
    }
    row.kind = Set(input.kind.trim().to_owned());
    row.endpoint = Set(endpoint);
    row.placement = Set(placement.key().to_owned());
    if let Some(key) = non_blank(&input.api_key) {
        row.api_key_sealed = Set(Some(lore.keys.seal(key.expose().trim())?));
    }
    row.updated_at = Set(Utc::now());
    let updated = row.update(&lore.db).await?;
    audit::record(
        &lore.db,
        actor,
        "provider.account_updated",
        Some(id),
        serde_json::json!({"key_rotated": rotated}),
    )
    .await?;
    Account::decode(updated)
}

pub async fn account(lore: &Corpus, id: &str) -> Result<Account> {
    Account::decode(account_row(lore, id).await?)
}

pub(super) async fn account_row(lore: &Corpus, id: &str) -> Result<provider_account::Model> {
    stored::<provider_account::Entity>(lore, id, ProviderError::AccountNotFound).await
}

pub async fn accounts(lore: &Corpus) -> Result<Vec<Account>> {
    provider_account::Entity::find()
        .order_by_asc(provider_account::Column::CreatedAt)
        .all(&lore.db)
        .await?
        .into_iter()
        .map(Account::decode)
        .collect()
}

/// Deletes an account with its targets (and the roles bound to them).
pub async fn delete_account(lore: &Corpus, actor: &Actor, id: &str) -> Result<()> {
    let account = account_row(lore, id).await?;
    let txn = crate::store::begin_write(&lore.db).await?;
    // Checked in the write transaction: a role bound meanwhile is seen.
    let targets: Vec<String> = model_target::Entity::find()
        .filter(model_target::Column::AccountId.eq(&account.id))
        .all(&txn)
        .await?
        .into_iter()
        .map(|t| t.id)
        .collect();
    let mut roles: Vec<String> = role_binding::Entity::find()
        .filter(role_binding::Column::TargetId.is_in(targets.clone()))
        .all(&txn)
        .await?
        .into_iter()
        .map(|binding| binding.role)
        .collect();
    roles.extend(
        escalation_tier::Entity::find()
            .filter(escalation_tier::Column::TargetId.is_in(targets))
            .all(&txn)
            .await?
            .into_iter()
            .map(|tier| format!("escalation (tier {})", tier.position)),
    );
    if !roles.is_empty() {
        roles.sort();
        return Err(ProviderError::InUse { account: account.name, roles }.into());
    }
    // Children first: not every database enforces the cascades.
    model_target::Entity::delete_many()
        .filter(model_target::Column::AccountId.eq(&account.id))
        .exec(&txn)
        .await?;
    provider_account::Entity::delete_by_id(&account.id).exec(&txn).await?;
    audit::record(&txn, actor, "provider.account_deleted", Some(id), serde_json::json!({})).await?;
    txn.commit().await?;
    Ok(())
}

/// The account's endpoint with its key opened, for one call.
pub fn endpoint_of(lore: &Corpus, account: &Account) -> Result<Endpoint> {
    let api_key = account.api_key_sealed.as_deref().map(|sealed| lore.keys.open(sealed)).transpose()?;
    Ok(Endpoint { base: account.endpoint.clone(), api_key, protocol: preset(&account.kind)?.protocol })
}

/// The models the provider lists, where it can list them.
pub async fn list_models(lore: &Corpus, id: &str) -> Result<Vec<String>> {
    let account = account(lore, id).await?;
    if account.kind == embedded::KIND {
        return Ok(embedded::available(&lore.settings));
    }
    let endpoint = endpoint_of(lore, &account)?;
    Ok(lore.provider_client.models(&endpoint).await.map_err(ProviderError::from)?)
}

/// One chat completion from the target at `endpoint`: the embedded model
/// in this process, or the provider's server, followed as `follow` asks
/// (see [`client::Follow`]: the reply's pieces as they are written, and an
/// end where it begins to repeat itself).
pub async fn chat(
    lore: &Corpus,
    endpoint: &Endpoint,
    model: &str,
    messages: &[Message],
    max_tokens: u32,
    temperature: f32,
    follow: client::Follow,
) -> Result<client::Completion, CallError> {
    if embedded::is_embedded(&endpoint.base) {
        let timeout = std::time::Duration::from_secs(lore.settings.providers.request_timeout_seconds.max(1));
        return embedded::chat(&lore.settings, &lore.embedded, model, messages, max_tokens, timeout, follow)
            .await;
    }
    lore.provider_client.chat(endpoint, model, messages, max_tokens, temperature, &follow).await
}

/// A provider account as every surface sees it. Its key stays sealed in
/// the engine: a surface learns only whether there is one.
#[derive(Clone, Debug, PartialEq)]
pub struct Account {
    pub id: String,
    pub name: String,
    /// A preset's key (`openai`, `llama_cpp`, ...) or `custom`.
    pub kind: String,
    pub placement: Placement,
    /// The API base, for example `http://127.0.0.1:8080/v1`.
    pub endpoint: String,
    api_key_sealed: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl Account {
    pub(super) fn decode(row: provider_account::Model) -> Result<Account> {
        let placement = Placement::parse(&row.placement).map_err(|_| {
            Error::Internal(format!(
                "provider account {}: its stored placement {:?} is unknown",
                row.id, row.placement
            ))
        })?;
        Ok(Account {
            id: row.id,
            name: row.name,
            kind: row.kind,
            placement,
            endpoint: row.endpoint,
            api_key_sealed: row.api_key_sealed,
            created_at: row.created_at,
            updated_at: row.updated_at,
        })
    }

    /// Whether an API key is stored (it is never shown).
    pub fn has_api_key(&self) -> bool {
        self.api_key_sealed.is_some()
    }
}
