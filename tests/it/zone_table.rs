//! The Functions library's time zones (functions/parts/06-zones.lua) are what
//! scripts/zone_table.rs makes from the module's database: a database bump, or a
//! hand edit, without a regeneration is caught here.

#[path = "../../scripts/zone_table.rs"]
#[allow(dead_code)]
pub(crate) mod generator;

#[test]
fn the_library_zone_table_is_what_the_database_makes() {
    if let Some(selection) = generator::stale() {
        panic!("functions/parts/06-zones.lua is stale: run cargo run --example zone-table -- --zones {selection}");
    }
}
