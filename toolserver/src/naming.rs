//! Tool names of the application profile (SPEC, Application profile rule
//! 2): `<name>` is the resource path with `/` and `.` replaced by `_`; when
//! two resources would share a name, the senior one keeps it and the later
//! takes its database name as a prefix, then, if that is taken too, `_`
//! and 6 hex characters of the SHA-256 of its path. Seniority is since when
//! a table is exported to the tool server at its path (recorded with the
//! export; the table's creation for an export older than that record),
//! resources written in Rust (Lore's own and extensions', which have no
//! table) first, the path breaking a tie; the database keeps it, so a name
//! an assistant was configured with stays put when another database
//! exports the same path later, and every replica and restart agrees.

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

/// The characters of a collision suffix (SPEC, Limits).
pub const SUFFIX_LEN: usize = 6;

/// One exported resource: its path, and the database and creation time of
/// the table behind it (none for a resource written in Rust).
pub struct Named<'a> {
    pub path: &'a str,
    pub database: Option<&'a str>,
    pub since: Option<DateTime<Utc>>,
}

/// `<name>` of every path.
pub fn names(resources: &[Named<'_>]) -> BTreeMap<String, String> {
    let mut senior: Vec<&Named<'_>> = resources.iter().collect();
    senior.sort_by(|a, b| (a.since, a.path).cmp(&(b.since, b.path)));
    let mut taken: HashSet<String> = HashSet::new();
    let mut named = BTreeMap::new();
    for resource in senior {
        let base = resource.path.replace(['/', '.'], "_");
        let prefixed = resource.database.map(|database| format!("{database}_{base}"));
        let suffixed = format!("{}_{}", prefixed.as_deref().unwrap_or(&base), suffix(resource.path));
        let name = [Some(base), prefixed]
            .into_iter()
            .flatten()
            .find(|candidate| !taken.contains(candidate))
            .unwrap_or(suffixed);
        taken.insert(name.clone());
        named.insert(resource.path.to_owned(), name);
    }
    named
}

/// 6 hex characters of the SHA-256 of `path`.
fn suffix(path: &str) -> String {
    let hex: String = Sha256::digest(path.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    hex[..SUFFIX_LEN].to_owned()
}
