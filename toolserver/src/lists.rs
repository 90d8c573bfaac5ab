//! Each caller's lists, held (SPEC, Authentication 6: "the list is cached
//! per session and recomputed when a list-changed notification would
//! fire"). What a caller sees depends only on its user, its role, its key
//! and the schema, and every change to those moves the application
//! database's epoch; so a [`Surface`] computed at one epoch serves every
//! `tools/list`, `resources/list` and `resources/templates/list` of that
//! caller until the epoch moves, which is exactly when [`crate::hub`]
//! recomputes the push channels. (Resources an extension registers are
//! registered before Lore serves, and what their `offers_tool` and
//! `instances` decide must follow from the same things:
//! `docs/extensions.md`.)

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use super::{identity, surface, Caller, Profile, Surface, ToolServer};
use engine::Result;

/// How many callers' lists are held before the oldest epochs are dropped.
const MOST: usize = 4096;

/// Each profile and caller's lists, with the epoch they were computed at.
type Held = HashMap<(Profile, String), (u64, Arc<Surface>)>;

/// The lists held in this process.
#[derive(Default)]
pub struct Lists {
    held: Mutex<Held>,
}

/// What `caller` sees on `profile` ([`surface`]), computed once per epoch.
pub async fn listed(lore: &ToolServer, profile: Profile, caller: &Caller) -> Result<Arc<Surface>> {
    let (lists, _) = lore.extension(Lists::default);
    let epoch = lore.appdb_cache().epoch();
    let who = (profile, holder(caller));
    if let Some((at, surface)) = lists.lock().get(&who) {
        if *at == epoch {
            return Ok(surface.clone());
        }
    }
    // The user as the application database holds it at this epoch (the
    // request read it earlier, before a change could move the epoch), and
    // kept only if the epoch did not move while computing.
    let current = super::as_stored(lore, caller).await?;
    let computed = Arc::new(surface(lore, profile, &current).await?);
    if lore.appdb_cache().epoch() != epoch {
        return Ok(computed);
    }
    let mut held = lists.lock();
    if held.len() >= MOST {
        held.retain(|_, (at, _)| *at == epoch);
        if held.len() >= MOST {
            held.clear();
        }
    }
    held.insert(who, (epoch, computed.clone()));
    Ok(computed)
}

impl Lists {
    fn lock(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Who the lists are held for: the user, how it signed in, and a digest of
/// its key (whose scopes decide the custom tools it is offered). No key is
/// kept.
pub fn holder(caller: &Caller) -> String {
    let who = caller.principal.as_ref().map(identity).unwrap_or_default();
    let key = caller.key.as_ref().map(|key| {
        let digest = Sha256::digest(key.expose().as_bytes());
        digest.iter().take(16).map(|b| format!("{b:02x}")).collect::<String>()
    });
    format!("{who}|{}|{}", caller.oauth, key.unwrap_or_default())
}
