# shellcheck shell=bash
# Sourced helper: an apt configuration of our own (sources list, lists and
# archives under DIR) so that fetching packages of another suite (trixie's
# criu, bookworm-backports' qemu) never edits the system's apt sources.
# The archive URIs come from the system's own apt configuration.
#
#   . scripts/apt-private.sh
#   apt_private DIR "SUITE..."      sets APTP (apt-get) and APTC (apt-cache)

apt_archive_uri() { # $1 = "main" or "security"
	apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 'Created-By: Packages' |
		awk -v want="$1" '{ sec = ($2 ~ /-security$/) }
			(want == "security") == sec { print $1; exit }'
}

apt_private() {
	local dir=$1 suites=$2 suite main sec
	main=$(apt_archive_uri main)
	sec=$(apt_archive_uri security)
	if [ -z "$main" ]; then
		echo "apt_private: no Debian archive in the system's apt configuration (run apt-get update)" >&2
		return 1
	fi
	mkdir -p "$dir/lists/partial" "$dir/archives/partial"
	: >"$dir/sources.list"
	for suite in $suites; do
		case "$suite" in
		*-security) [ -z "$sec" ] || echo "deb $sec $suite main" >>"$dir/sources.list" ;;
		*) echo "deb $main $suite main" >>"$dir/sources.list" ;;
		esac
	done
	APTP=(apt-get -q -o Dir::Etc::sourcelist="$dir/sources.list" -o Dir::Etc::sourceparts=-
		-o Dir::State::Lists="$dir/lists" -o Dir::Cache::archives="$dir/archives"
		-o APT::Sandbox::User=root)
	APTC=(apt-cache -o Dir::Etc::sourcelist="$dir/sources.list" -o Dir::Etc::sourceparts=-
		-o Dir::State::Lists="$dir/lists")
}
