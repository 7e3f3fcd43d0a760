//! A perturbed trial's case as its Lua checks and agent see it (SPEC §17):
//! the case table with what the perturbation replaces (input, user,
//! checks, fixture). The plan's side (tools dropped, faults, the fixture's
//! template) is the case's variant, `CasePlan::variants`.

use mlua::{Lua, Table, Value};

/// A copy of `case_t` with the perturbation `name`'s replacements: the
/// case's own perturbation of that name, else the suite's.
pub fn case_table(lua: &Lua, suite_t: &Table, case_t: &Table, name: &str) -> Result<Table, String> {
    let find = |t: &Table| -> Option<Table> {
        t.raw_get::<Option<Table>>("perturb")
            .ok()
            .flatten()
            .and_then(|p| p.raw_get::<Option<Table>>(name).ok().flatten())
    };
    let p = find(case_t)
        .or_else(|| find(suite_t))
        .ok_or_else(|| format!("perturbation '{name}' is not declared for this case"))?;
    let copy = lua.create_table().map_err(|e| e.to_string())?;
    for pair in case_t.pairs::<Value, Value>() {
        let (k, v) = pair.map_err(|e| e.to_string())?;
        copy.raw_set(k, v).map_err(|e| e.to_string())?;
    }
    for key in ["input", "user", "checks", "fixture"] {
        let v: Value = p.raw_get(key).map_err(|e| e.to_string())?;
        if !v.is_nil() {
            copy.raw_set(key, v).map_err(|e| e.to_string())?;
        }
    }
    Ok(copy)
}
