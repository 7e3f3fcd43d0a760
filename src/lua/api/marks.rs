//! The values a check returns first when it neither passes nor fails: skipped
//! (not applicable, e.g. no judge configured) or undecided (a grader error
//! that keeps its evidence). Light userdata: no Lua value can forge them.

use mlua::Value;

/// The value a check returns first to say "skipped, not passed".
/// A light userdata that is not `evalua.null` (NULL): a dangling, never-read address.
pub const SKIP: Value = Value::LightUserData(mlua::LightUserData(std::ptr::dangling_mut::<std::ffi::c_void>()));

/// The value a check returns first to say "a grader error, with evidence":
/// `return host.UNDECIDED, evidence, message` (a judge's invalid or
/// undeterminable verdict keeps its votes). Another dangling address (2).
pub const UNDECIDED: Value =
    Value::LightUserData(mlua::LightUserData(std::ptr::dangling_mut::<u16>() as *mut std::ffi::c_void));
