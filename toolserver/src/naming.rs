//! Tool names of the application profile (SPEC, Application profile rule
//! 2): `<name>` is the resource path with `/` and `.` replaced by `_`; when
//! two resources would share a name, each of them is prefixed with its
//! database name, and a name still shared gets `_` and 6 hex characters of
//! the SHA-256 of its path. The names depend only on the set of exported
//! paths, so they are the same after a restart.

use std::collections::{BTreeMap, HashMap};

use sha2::{Digest, Sha256};

/// The characters of a collision suffix (SPEC, Limits).
pub const SUFFIX_LEN: usize = 6;

/// One exported resource: its path and the database of the table behind
/// it (none for a resource written in Rust).
pub struct Named<'a> {
    pub path: &'a str,
    pub database: Option<&'a str>,
}

/// `<name>` of every path.
pub fn names(resources: &[Named<'_>]) -> BTreeMap<String, String> {
    let base = |path: &str| path.replace(['/', '.'], "_");
    let mut counts: HashMap<String, usize> = HashMap::new();
    for resource in resources {
        *counts.entry(base(resource.path)).or_default() += 1;
    }
    let mut named: Vec<(String, String)> = resources
        .iter()
        .map(|r| {
            let name = base(r.path);
            let name = match r.database {
                Some(database) if counts[&name] > 1 => format!("{database}_{name}"),
                _ => name,
            };
            (r.path.to_owned(), name)
        })
        .collect();
    let mut counts: HashMap<String, usize> = HashMap::new();
    for (_, name) in &named {
        *counts.entry(name.clone()).or_default() += 1;
    }
    for (path, name) in &mut named {
        if counts[name.as_str()] > 1 {
            let digest = Sha256::digest(path.as_bytes());
            let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
            name.push('_');
            name.push_str(&hex[..SUFFIX_LEN]);
        }
    }
    named.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(list: &[(&'static str, Option<&'static str>)]) -> BTreeMap<String, String> {
        let resources: Vec<Named<'_>> =
            list.iter().map(|(path, database)| Named { path, database: *database }).collect();
        names(&resources)
    }

    #[test]
    fn slashes_and_dots_become_underscores() {
        let names = named(&[("dogs/puppies", Some("dev")), ("v1.cats", Some("dev"))]);
        assert_eq!(names["dogs/puppies"], "dogs_puppies");
        assert_eq!(names["v1.cats"], "v1_cats");
    }

    #[test]
    fn a_collision_takes_the_database_then_a_suffix() {
        let names =
            named(&[("a/b", Some("dev")), ("a.b", Some("prod")), ("a_b", Some("prod")), ("c", Some("dev"))]);
        assert_eq!(names["a/b"], "dev_a_b", "the database prefix settles this one");
        let (x, y) = (&names["a.b"], &names["a_b"]);
        assert!(x.starts_with("prod_a_b_") && y.starts_with("prod_a_b_") && x != y, "{x} {y}");
        assert_eq!(x.len(), "prod_a_b_".len() + SUFFIX_LEN);
        assert_eq!(names["c"], "c", "no collision, no change");
        // The same set of paths gives the same names, in any order.
        let again =
            named(&[("c", Some("dev")), ("a_b", Some("prod")), ("a.b", Some("prod")), ("a/b", Some("dev"))]);
        assert_eq!(names, again);
    }
}
