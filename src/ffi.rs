//! The module API at its lowest: the one `api!` macro every call into the
//! server goes through, the bytes of a module string, a command's
//! arguments as [`Arg`]s, strings the module owns, and the server's `INFO`
//! fields and version. Nothing here knows a command.

use std::ffi::CStr;
use std::os::raw::c_int;
use std::ptr::NonNull;

use redis_module::raw;

/// Calls a Redis module API function that the server is required to provide
/// (every one used exists in Redis 7.0 and Valkey 8).
macro_rules! api {
    ($name:ident($($arg:expr),* $(,)?)) => {
        // SAFETY: the pointers passed come from the server for the current
        // command or callback and are used only while it runs; the function
        // exists on every supported server.
        unsafe { redis_module::raw::$name.expect(stringify!($name))($($arg),*) }
    };
}
pub(crate) use api;

/// The bytes of a module string, valid while the string lives.
#[inline]
pub fn bytes_of<'a>(s: *const raw::RedisModuleString) -> &'a [u8] {
    let mut len = 0usize;
    let ptr = api!(RedisModule_StringPtrLen(s, &mut len));
    // SAFETY: the server returns a pointer to `len` bytes owned by the string.
    unsafe { std::slice::from_raw_parts(ptr.cast(), len) }
}

/// The arguments of a command, as the server passes them.
#[inline]
pub fn args<'a>(argv: *mut *mut raw::RedisModuleString, argc: c_int) -> &'a [Arg] {
    // SAFETY: the server passes `argc` valid argument pointers, alive for the
    // whole command; `Arg` is a `repr(transparent)` module-string pointer.
    unsafe { std::slice::from_raw_parts(argv.cast::<Arg>(), argc.max(0) as usize) }
}

/// A string created through the module API; freed on drop.
pub struct OwnedString {
    pub ctx: *mut raw::RedisModuleCtx,
    pub ptr: *mut raw::RedisModuleString,
}

impl OwnedString {
    pub fn new(ctx: *mut raw::RedisModuleCtx, bytes: &[u8]) -> OwnedString {
        let ptr = api!(RedisModule_CreateString(
            ctx,
            bytes.as_ptr().cast(),
            bytes.len()
        ));
        OwnedString { ctx, ptr }
    }

    /// The string as an argument (a key name), valid while `self` lives.
    #[inline]
    pub fn arg(&self) -> Arg {
        Arg::from_raw(self.ptr)
    }
}

impl Drop for OwnedString {
    fn drop(&mut self) {
        api!(RedisModule_FreeString(self.ctx, self.ptr));
    }
}

/// Reads fields of the server's `INFO` (never on a command's hot path:
/// `INFO rl`, the cron event, and rare checks).
/// One `INFO` section as the server reported it; freed on drop.
pub struct ServerInfo(NonNull<raw::RedisModuleServerInfoData>);

impl ServerInfo {
    /// `INFO <section>`; `None` if the server does not answer.
    pub fn read(section: &CStr) -> Option<ServerInfo> {
        // SAFETY: a NULL context is allowed; the data is freed on drop.
        let info = unsafe {
            raw::RedisModule_GetServerInfo.expect("GetServerInfo")(
                std::ptr::null_mut(),
                section.as_ptr(),
            )
        };
        NonNull::new(info).map(ServerInfo)
    }

    /// The value of `field`, if the section has it.
    pub fn field(&self, field: &CStr) -> Option<&[u8]> {
        // SAFETY: the data is live; the value is a NUL-terminated string it owns,
        // valid as long as `self`.
        unsafe {
            let value = raw::RedisModule_ServerInfoGetFieldC.expect("ServerInfoGetFieldC")(
                self.0.as_ptr(),
                field.as_ptr(),
            );
            (!value.is_null()).then(|| CStr::from_ptr(value).to_bytes())
        }
    }
}

impl Drop for ServerInfo {
    fn drop(&mut self) {
        // SAFETY: the data came from GetServerInfo with a NULL context.
        unsafe {
            raw::RedisModule_FreeServerInfo.expect("FreeServerInfo")(
                std::ptr::null_mut(),
                self.0.as_ptr(),
            )
        };
    }
}

/// The server's version, `0x00MMmmpp`.
pub fn server_version() -> c_int {
    // SAFETY: available on every supported server (Redis 6.0.9+).
    unsafe { raw::RedisModule_GetServerVersion.expect("GetServerVersion")() }
}

/// An `OK` status for the server.
pub const OK: c_int = raw::REDISMODULE_OK as c_int;

/// A command argument or a key name: a module string the server (or an
/// [`OwnedString`]) keeps alive while the command or callback runs.
#[repr(transparent)]
#[derive(Clone, Copy)]
pub struct Arg(*mut raw::RedisModuleString);

impl Arg {
    #[inline]
    pub(crate) fn from_raw(ptr: *mut raw::RedisModuleString) -> Arg {
        Arg(ptr)
    }

    #[inline]
    pub(crate) fn ptr(self) -> *mut raw::RedisModuleString {
        self.0
    }

    /// The argument's bytes, valid while it lives.
    #[inline]
    pub fn bytes<'a>(self) -> &'a [u8] {
        bytes_of(self.0)
    }
}
