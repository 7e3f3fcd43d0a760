//! The trace reader (`otel::read`, what `evalua grade` reads): whatever bytes
//! a trace file holds (OTLP JSON, JSON lines, flat span lines, or garbage),
//! reading it ends in items, warnings or an error, never a panic.
#![no_main]

use evalua::otel::read::{Input, read};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = dir.path().join("traces.json");
    std::fs::write(&path, data).expect("write the input");
    let mut items = 0usize;
    // A panic while parsing a record is caught and said as a warning: the
    // fuzzer must see it as the crash it is.
    let _ = read(
        &[Input::File(path)],
        2,
        &mut |warning| assert!(!warning.contains("internal error in evalua"), "{warning}"),
        &mut |_item| {
            items += 1;
            Ok(())
        },
    );
});
