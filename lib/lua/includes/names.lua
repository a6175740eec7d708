-- Names the scripts and the library share. scripts/build-lua.mjs exports these to TypeScript as
-- LUA_NAMES, so each is written once, here.
-- RESERVED_PREFIX: a reservation's value starts with it (no lock value does: values are base64url).
-- RELEASE_PREFIX: a key's release channel is RELEASE_PREFIX .. key.
-- HANDOVER_PREFIX: the handover channel of one instance: HANDOVER_PREFIX .. tag .. ':' .. key.
-- INSTANCE_TAG_LENGTH: how many leading characters of a ticket id name the instance that queued it.
local RESERVED_PREFIX = '~'
local RELEASE_PREFIX = '__quorum-lock__:'
local HANDOVER_PREFIX = '__quorum-lock__@'
local INSTANCE_TAG_LENGTH = 8
