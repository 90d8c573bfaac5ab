//! `lore rollups rebuild`: the Dashboard's rollups recomputed from the runs.

use engine::Settings;

use super::open;
use super::output::{fail, print_json};

pub async fn rebuild(settings: Settings, json: bool) -> anyhow::Result<()> {
    let lore = open(settings).await?;
    let rebuilt = engine::metrics::rebuild(&lore).await.map_err(fail)?;
    if json {
        print_json(&rebuilt);
    } else {
        println!("Rebuilt the rollups from {} answer runs ({} rows).", rebuilt.runs, rebuilt.rows);
    }
    Ok(())
}
