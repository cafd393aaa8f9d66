  local ZONE_TABLE = { first = 1970, last = 2100, from_s = 0, to_s = 4133980800, alphabet = "", zones = {} }
