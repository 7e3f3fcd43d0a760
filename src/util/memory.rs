//! Giving freed memory back to the system between a run's phases.

/// Return the allocators' free pages to the system: mimalloc's (the binary's
/// global allocator, Lua's included) and glibc's (SQLite's). Called between a
/// run's trials and its figures: the memory the plan and the workers' Lua
/// states freed should not stay in the process's resident size while the
/// figures and reports are computed.
pub fn release_free() {
    // SAFETY: both only return free pages; they touch no live allocation.
    unsafe {
        libmimalloc_sys::mi_collect(true);
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        libc::malloc_trim(0);
    }
}
