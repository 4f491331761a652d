import type { CatalogueGroup } from '../../venues/catalogue.js';

/**
 * Slugs (docs/venues.md "Our ids"): Polymarket's slug, or the lower-cased
 * Kalshi event ticker suffixed `-kalshi` when another group holds it. A
 * Kalshi group keeps the slug it was first given, so its URL is stable; a
 * Polymarket group arriving on a slug a Kalshi group holds takes it, and the
 * Kalshi group moves to `-kalshi`. `existing` holds the stored groups that
 * may matter: those of the page and those holding its candidate slugs.
 */
export function assignSlugs(
  groups: Array<Pick<CatalogueGroup, 'id' | 'venue' | 'slug' | 'venueEventId'>>,
  existing: Array<{ id: string; slug: string }>,
): { slugs: Map<string, string>; renames: Array<{ id: string; slug: string }> } {
  const owner = new Map<string, string>();
  const slugOf = new Map<string, string>();
  for (const e of existing) {
    owner.set(e.slug, e.id);
    slugOf.set(e.id, e.slug);
  }
  const slugs = new Map<string, string>();
  const renames: Array<{ id: string; slug: string }> = [];
  const take = (id: string, slug: string) => {
    const old = slugOf.get(id);
    if (old !== undefined && old !== slug && owner.get(old) === id) owner.delete(old);
    owner.set(slug, id);
    slugOf.set(id, slug);
  };
  const free = (slug: string, id: string) => {
    const o = owner.get(slug);
    return o === undefined || o === id;
  };
  const ordered = [...groups.filter((g) => g.venue === 'polymarket'), ...groups.filter((g) => g.venue !== 'polymarket')];
  for (const g of ordered) {
    let slug: string;
    if (g.venue === 'polymarket') {
      slug = g.slug;
      const holder = owner.get(slug);
      if (holder !== undefined && holder !== g.id) {
        if (holder.startsWith('ks-')) {
          let moved = `${slug}-kalshi`;
          for (let n = 2; !free(moved, holder); n++) moved = `${slug}-kalshi-${n}`;
          take(holder, moved);
          renames.push({ id: holder, slug: moved });
        } else {
          slug = `${g.slug}-${g.venueEventId}`;
        }
      }
    } else {
      const kept = slugOf.get(g.id);
      if (kept !== undefined && owner.get(kept) === g.id) slug = kept;
      else {
        slug = g.slug;
        if (!free(slug, g.id)) slug = `${g.slug}-kalshi`;
        for (let n = 2; !free(slug, g.id); n++) slug = `${g.slug}-kalshi-${n}`;
      }
    }
    take(g.id, slug);
    slugs.set(g.id, slug);
  }
  // A group renamed and then processed itself keeps its latest assignment.
  return { slugs, renames: renames.filter((r) => !slugs.has(r.id) || slugs.get(r.id) === r.slug) };
}

/** LIKE patterns of the slugs a page's groups may collide with (`<slug>-kalshi…`, `<slug>-<id>`). */
export function slugPatterns(groups: Array<Pick<CatalogueGroup, 'slug'>>): string[] {
  const esc = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);
  return [...new Set(groups.map((g) => `${esc(g.slug)}-%`))];
}
