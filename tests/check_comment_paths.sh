#!/usr/bin/env bash
# Every source file named in a comment exists: a path (cache/policy.h,
# engine/ffn/ffn_flash.c) from the tree's root or from the commenting file's
# folder, a bare name (ffn_flash.c) anywhere in the tree. Reads the comments
# of every .c, .h, .def, .cu and .kern under the layers and tests/ (string
# literals and code are not comments: "transformer.h.0." is a tensor name),
# and names each reference to a file that is not there. Names outside the
# tree that comments mean on purpose are listed in `outside` below.
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
# karpathy's llama2.c (the format converted from) and its run.c; CUDA's own
# header; the placeholder name of the .def lists' "one file per entry" rule
outside=" llama2.c run.c cuda_fp16.h cache/layout_x.c cache/policy_x.c engine/ffn/source_x.c "
dirs=()
for d in common io traces cache sim engine harness cli tests python tools; do
    [ -d "$root/$d" ] && dirs+=("$root/$d")
done
[ ${#dirs[@]} -gt 0 ] || { echo "no source folders under $root"; exit 1; }
mapfile -t sources < <(find "${dirs[@]}" -type f \( -name '*.[ch]' -o -name '*.def' -o -name '*.cu' -o -name '*.kern' \) | sort)
# every file's path from the root, and every file's name (build folders
# and git's left out)
declare -A tree=() names=()
while IFS= read -r p; do
    tree[$p]=1
    names[${p##*/}]=1
done < <(cd "$root" && find . \( -name 'build*' -o -name '.git' \) -prune -o -type f -print | sed 's|^\./||')
bad=0
refs=0
# "FILE LINE NAME" for each file name in a comment, one perl over every file
while read -r rel line ref; do
    refs=$((refs + 1))
    ref=${ref#./}
    case "$outside" in *" $ref "*) continue ;; esac
    if [[ "$ref" == */* ]]; then
        here=$(dirname "$rel")
        [ -n "${tree[$ref]:-}" ] || [ -n "${tree[$here/$ref]:-}" ] && continue
    else
        [ -n "${names[$ref]:-}" ] && continue
    fi
    echo "stale reference: $rel:$line names $ref, which is not in the tree"
    bad=$((bad + 1))
done < <(ROOT="$root/" perl -0777 -ne '
    my $rel = $ARGV;
    $rel = substr($rel, length $ENV{ROOT}) if index($rel, $ENV{ROOT}) == 0;
    s{"(?:\\.|[^"\\\n])*"}{my $s = $&; $s =~ s/[^\n]/ /g; $s}ge;   # strings: blanked, lines kept
    s{\x27(?:\\.|[^\x27\\\n])+\x27}{my $s = $&; $s =~ s/[^\n]/ /g; $s}ge;
    while (m{/\*.*?\*/|//[^\n]*}gs) {
        my ($c, $at) = ($&, $-[0]);
        my $line = 1 + (substr($_, 0, $at) =~ tr/\n//);
        while ($c =~ m{([A-Za-z0-9_./-]*[A-Za-z0-9_])\.(c|h|def|cu|kern)\b(?![A-Za-z0-9_(])}g) {
            my $name = "$1.$2";
            my $l = $line + (substr($c, 0, $-[0]) =~ tr/\n//);
            next if $name =~ m{^\.|\*|://};
            print "$rel $l $name\n";
        }
    }' "${sources[@]}")
echo "${#sources[@]} files, $refs file names in comments, $bad stale"
[ "$bad" -eq 0 ]
