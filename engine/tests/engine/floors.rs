//! The engine's floors only point down (ARCHITECTURE.md, "Engine floors"):
//! a module imports modules of its own floor or of floors below, never of
//! a floor above, so no circle of imports spans two floors. Read off the
//! sources: every `crate::<module>` path outside test code.

use std::collections::BTreeMap;
use std::path::Path;

/// Each top-level module of `corpus/src` (floors 1 to 3, the crate
/// `lore-corpus`) and of `engine/src` (floors 4 and 5), and its floor. The
/// ground floor (settings, store, audit, secrets, trace, logbook, fetch) is
/// the crate `lore-core`. Between crates the compiler keeps every import
/// pointing down; this table keeps the floors inside each crate apart. A
/// crate's root (`lib.rs`, its handle) stands on the crate's top floor.
const FLOORS: &[(&str, u8)] = &[
    // 1. Records and sign-in.
    ("auth", 1),
    ("extract", 1),
    ("appdb", 1),
    // 2. Models, the chunk index, and what a change drops.
    ("providers", 2),
    ("embed", 2),
    ("chunk", 2),
    ("index", 2),
    ("fingerprint", 2),
    ("retrieve", 2),
    ("cluster", 2),
    // 3. Sources, ingest, tuning, the profile, search; and the crate's
    // error, which names each floor's error.
    ("sources", 3),
    ("ingest", 3),
    ("tuning", 3),
    ("profile", 3),
    ("search", 3),
    ("rerank", 3),
    ("shadow", 3),
    ("judging", 3),
    ("upkeep", 3),
    ("error", 3),
    // 4. Answer (the crate `engine` from here up).
    ("answer", 4),
    ("asker", 4),
    ("readiness", 4),
    ("keys", 4),
    ("oauth", 4),
    ("recorder", 4),
    ("metrics", 4),
    ("wizard", 4),
    ("evals", 4),
    // 5. The operations API and the resources, over everything (the tool
    // server over them is the crate `lore-toolserver`).
    ("operations", 5),
    ("resources", 5),
];

/// The crates of the floors, and the floors each holds.
const CRATES: &[(&str, std::ops::RangeInclusive<u8>)] = &[("corpus", 1..=3), ("engine", 4..=5)];

fn floor(module: &str) -> Option<u8> {
    FLOORS.iter().find(|(name, _)| *name == module).map(|(_, floor)| *floor)
}

/// `crate::<module>` paths in `text`, test modules left out.
fn imports(text: &str) -> Vec<String> {
    let code = text.split("#[cfg(test)]").next().unwrap_or_default();
    code.match_indices("crate::")
        .map(|(at, _)| {
            code[at + "crate::".len()..].chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect()
        })
        .filter(|name: &String| !name.is_empty())
        .collect()
}

fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_module_imports_a_floor_above_its_own() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut upward: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut seen = 0;
    for (krate, floors) in CRATES {
        let src = root.join(krate).join("src");
        let mut files = Vec::new();
        sources(&src, &mut files);
        for file in files {
            let relative = file.strip_prefix(&src).unwrap();
            let first = relative.components().next().unwrap().as_os_str().to_string_lossy();
            let module = first.trim_end_matches(".rs").to_owned();
            // A crate's root holds its handle, which holds every floor of
            // the crate: it stands on the crate's top floor.
            let own = if module == "lib" {
                *floors.end()
            } else {
                floor(&module).unwrap_or_else(|| panic!("{krate}/src/{module} has no floor in FLOORS"))
            };
            assert!(floors.contains(&own), "{krate}/src/{module} is of floor {own}, which is not in {krate}");
            seen += 1;
            for import in imports(&std::fs::read_to_string(&file).unwrap()) {
                if let Some(theirs) = floor(&import) {
                    if theirs > own {
                        upward.entry(format!("{krate}/src/{}", relative.display())).or_default().push(import);
                    }
                }
            }
        }
    }
    assert!(seen > 30, "the floors' sources were not found ({seen} files)");
    assert!(upward.is_empty(), "modules importing a floor above their own: {upward:#?}");
}
