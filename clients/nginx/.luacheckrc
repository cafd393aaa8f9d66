-- luacheck (Debian's lua-check): the package runs inside NGINX's Lua module.
std = "ngx_lua"
max_line_length = 120
