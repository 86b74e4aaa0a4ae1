import re,os,collections
deps=collections.defaultdict(set); where=collections.defaultdict(list)
for root,_,files in os.walk('src'):
    for f in files:
        if not f.endswith('.rs'): continue
        p=os.path.join(root,f); rel=p[4:]
        top=rel.split('/')[0].removesuffix('.rs')
        for i,line in enumerate(open(p),1):
            s=line.strip()
            if s.startswith('//'): continue
            for m in re.findall(r'crate::([a-z_]+)',s.split('//')[0]):
                if m!=top: deps[top].add(m); where[(top,m)].append(f"{rel}:{i}")
for k in sorted(deps): print(f"{k:10} -> {', '.join(sorted(deps[k]))}")
import sys
for a in sys.argv[1:]:
    x,y=a.split(':'); print(a, where[(x,y)])
