# Sourced by the build scripts. `up_to_date STAMP SOURCE...`: true when STAMP exists and no
# file under the SOURCEs is newer than it (the build it marks is then current).
up_to_date() {
  local stamp=$1
  shift
  [ -f "$stamp" ] && [ -z "$(find "$@" -newer "$stamp" -print -quit)" ]
}
