//! `lore schema apply`: applies the application database's schema file
//! (the configured `appdb.schema`, or `--file`), as a start does.

use anyhow::Context;
use app::wire::SchemaAppliedView;
use engine::appdb::schema;
use engine::Settings;

use super::output::{fail, print_json};
use super::{open, ACTOR};
use crate::cli::SchemaCommand;

pub async fn run(settings: Settings, command: SchemaCommand) -> anyhow::Result<()> {
    let SchemaCommand::Apply { file, json } = command;
    let path = file.or_else(|| settings.appdb.schema.clone()).context(
        "no schema file: set `appdb.schema` in the configuration (LORE_APPDB__SCHEMA) or pass --file",
    )?;
    let lore = open(settings).await?;
    let applied = SchemaAppliedView::from(schema::apply_file(&lore, &ACTOR, &path).await.map_err(fail)?);
    if json {
        print_json(&applied);
    } else {
        for (what, tables) in
            [("created", &applied.created), ("changed", &applied.changed), ("unchanged", &applied.unchanged)]
        {
            if !tables.is_empty() {
                println!("{what}: {}", tables.join(", "));
            }
        }
        if applied.created.is_empty() && applied.changed.is_empty() {
            println!("The schema file {} is applied; nothing changed.", path.display());
        }
    }
    Ok(())
}
