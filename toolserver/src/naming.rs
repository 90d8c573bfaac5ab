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

#[cfg(test)]
mod tests {
    use super::*;

    fn at(second: i64) -> Option<DateTime<Utc>> {
        DateTime::from_timestamp(second, 0)
    }

    fn named(list: &[(&'static str, Option<&'static str>, i64)]) -> BTreeMap<String, String> {
        let resources: Vec<Named<'_>> = list
            .iter()
            .map(|(path, database, since)| Named { path, database: *database, since: at(*since) })
            .collect();
        names(&resources)
    }

    #[test]
    fn slashes_and_dots_become_underscores() {
        let names = named(&[("dogs/puppies", Some("dev"), 1), ("v1.cats", Some("dev"), 1)]);
        assert_eq!(names["dogs/puppies"], "dogs_puppies");
        assert_eq!(names["v1.cats"], "v1_cats");
    }

    #[test]
    fn the_senior_keeps_its_name_and_a_later_one_takes_the_database_then_a_suffix() {
        let names = named(&[
            ("a/b", Some("dev"), 1),
            ("a.b", Some("prod"), 2),
            ("a_b", Some("prod"), 3),
            ("c", Some("dev"), 1),
        ]);
        assert_eq!(names["a/b"], "a_b", "the first keeps its name");
        assert_eq!(names["a.b"], "prod_a_b", "the database prefix settles the second");
        let third = &names["a_b"];
        assert!(third.starts_with("prod_a_b_") && third.len() == "prod_a_b_".len() + SUFFIX_LEN, "{third}");
        assert_eq!(names["c"], "c", "no collision, no change");
        // The same resources give the same names, in any order.
        let again = named(&[
            ("c", Some("dev"), 1),
            ("a_b", Some("prod"), 3),
            ("a.b", Some("prod"), 2),
            ("a/b", Some("dev"), 1),
        ]);
        assert_eq!(names, again);
    }

    #[test]
    fn a_later_export_of_a_taken_name_leaves_the_earlier_alone() {
        let before = named(&[("dogs_x", Some("dev"), 1)]);
        // The newcomer's path sorts first: seniority, not the path, decides.
        let after = named(&[("dogs_x", Some("dev"), 1), ("dogs/x", Some("prod"), 2)]);
        assert_eq!(before["dogs_x"], "dogs_x");
        assert_eq!(after["dogs_x"], "dogs_x", "get_dogs_x stays get_dogs_x");
        assert_eq!(after["dogs/x"], "prod_dogs_x");
        // Lore's own resources (no table) come before every table.
        let mixed = names(&[
            Named { path: "a/b", database: Some("dev"), since: at(0) },
            Named { path: "a_b", database: None, since: None },
        ]);
        assert_eq!(mixed["a_b"], "a_b", "a resource in Rust is the senior");
        assert_eq!(mixed["a/b"], "dev_a_b");
    }
}
