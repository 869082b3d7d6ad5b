#!/usr/bin/env bash
# Unity needs a .meta file (with a stable GUID) beside every file and folder
# of a package installed from a git URL, else it ignores the asset.
# meta.sh checks that sdk/csharp has them (and no stale ones);
# meta.sh --write creates the missing ones (GUIDs derived from the path).
set -euo pipefail
cd "$(dirname "$0")/.."
write=""; [ "${1:-}" = "--write" ] && write=1
bad=0
while IFS= read -r p; do
  p="${p#./}"
  m="$p.meta"
  [ -f "$m" ] && continue
  if [ -z "$write" ]; then echo "missing $m" >&2; bad=1; continue; fi
  guid="$(printf 'realsync-csharp:%s' "$p" | md5sum | cut -c1-32)"
  case "$p" in
    *.cs) importer="MonoImporter:
  externalObjects: {}
  serializedVersion: 2
  defaultReferences: []
  executionOrder: 0
  icon: {instanceID: 0}" ;;
    *.asmdef) importer="AssemblyDefinitionImporter:
  externalObjects: {}" ;;
    package.json) importer="PackageManifestImporter:
  externalObjects: {}" ;;
    *.md) importer="TextScriptImporter:
  externalObjects: {}" ;;
    *) importer="DefaultImporter:
  externalObjects: {}" ;;
  esac
  {
    echo "fileFormatVersion: 2"
    echo "guid: $guid"
    [ -d "$p" ] && echo "folderAsset: yes"
    echo "$importer"
    echo "  userData: "
    echo "  assetBundleName: "
    echo "  assetBundleVariant: "
  } >"$m"
  echo "wrote $m"
done < <(find . -mindepth 1 \( -name '*~' -o -name '.*' \) -prune -o ! -name '*.meta' -print | sort)
while IFS= read -r m; do
  [ -e "${m%.meta}" ] || { echo "stale $m" >&2; bad=1; }
done < <(find . -name '*~' -prune -o -name '*.meta' -print)
if [ "$bad" -ne 0 ]; then
  echo "Unity .meta files out of date: run sdk/csharp/Tests~/meta.sh --write and commit" >&2
  exit 1
fi
