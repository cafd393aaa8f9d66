//! Reading fields of the server's `INFO` from a module (never on a command's
//! hot path: `INFO rl`, the cron event, and rare checks).

use std::ffi::CStr;
use std::ptr::NonNull;

use redis_module::raw;

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
