/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/* The member registry; see mod_proxy_beacon_registry.h. */

#include "mod_proxy_beacon_registry.h"

#include <apr_file_io.h>
#include <apr_hash.h>
#include <apr_md5.h>
#include <apr_strings.h>
#include <ap_provider.h>
#include <ap_slotmem.h>

/*
 * mod_slotmem_shm restores a persisted file of another layout without a
 * word (it reads the bytes, and only notes "old persist file?"), and
 * anyone who can write DefaultRuntimeDir can write one: an entry counts
 * only when it carries this layout's magic and version and its strings
 * end inside their fields.
 */
#define MARK_IN_USE 0x42434e52 /* "BCNR" */
#define MARK_HEADER 0x42434e48 /* "BCNH" */
#define REGISTRY_VERSION 4
/* Version 3 differs in two fields that were unused since: its entries
 * are read as version 4 with those cleared, so an upgrade loses nothing. */
#define PREVIOUS_VERSION 3

/* The slotmem holds the header in slot 0, then the entries: each slot is
 * the size of an entry, which the header fits in. */
#define HEADER_SLOT 0
#define FIRST_ENTRY 1

/* The contexts each member claims, in a slotmem of their own (one slot per
 * entry, by index) rather than in the entry: version 4's layout, and so
 * what a persisted registry holds, stays as it is. A slot counts for
 * entry i only while it names the entry's url. */
#define MARK_CLAIMS 0x42434e43 /* "BCNC" */
typedef struct {
    apr_uint32_t magic;        /* MARK_CLAIMS; anything else: no claims */
    apr_uint32_t len;          /* of value */
    char url[BEACON_URL_MAX];  /* the member it is of */
    char value[BEACON_CLAIMS_SIZE]; /* ctx=, as announced, NUL-terminated */
} claims_slot;

_Static_assert(sizeof(beacon_registry_header) <= sizeof(beacon_entry),
               "the header takes an entry's slot");

struct beacon_registry {
    ap_slotmem_provider_t *storage;
    ap_slotmem_instance_t *slots;
    ap_slotmem_instance_t *claims; /* claims_slot by entry index */
    const char *key;               /* the receiver's, for log lines */
    unsigned entries;              /* beacon_registry_size */
    unsigned next_free;            /* where this process looks for a free
                                    * entry first: after the last it took */
    /* The owner's index of the entries by url, members and replay marks
     * alike (open addressing, entry index + 1, 0: empty), so that a
     * datagram's lookups cost a probe or two, a url with no entry (one
     * that waits for a slot) included, rather than a walk of every
     * entry. Built from the entries at the first lookup after this
     * process named an entry (named != indexed): naming is the owner's
     * alone while it runs (a new owner calls beacon_registry_own), and
     * an entry freed or renamed since is found out by the compare each
     * probe makes. */
    apr_uint32_t *index;
    apr_uint32_t index_mask;       /* slots - 1, a power of two */
    apr_uint64_t named, indexed;
};

/* What a persisted file of another size held (its slots' bytes), to be
 * carried into the registry made in its place. */
typedef struct {
    unsigned num;                  /* slots; 0: nothing to carry */
    const char *data;              /* slot i at data + i x size */
} carried_slots;

/* ------------------------------------------------------------------ */
/* The persisted file                                                  */

/*
 * mod_slotmem_shm's file, as it writes it (modules/slotmem): its name,
 * then the free count (aligned), every entry, one in-use byte per entry,
 * an MD5 digest of those, and the slots' description. A file of any other
 * size, or whose digest or description is wrong, is not ours to read.
 */
typedef struct {
    apr_size_t size;
    unsigned int num;
    unsigned int type;
} persisted_desc;

#define PERSIST_PREFIX "slotmem-shm-"
#define PERSIST_SUFFIX ".shm.persist"

static apr_size_t persisted_data_size(apr_size_t size, unsigned num)
{
    return APR_ALIGN_DEFAULT(sizeof(unsigned int)) + size * num + num;
}

/* The slots of size bytes a file of whole bytes holds, or 0 when no
 * number of them makes that size. */
static unsigned persisted_num(apr_size_t size, apr_off_t whole)
{
    apr_size_t fixed = APR_ALIGN_DEFAULT(sizeof(unsigned int)) +
                       APR_MD5_DIGESTSIZE +
                       APR_ALIGN_DEFAULT(sizeof(persisted_desc));

    if (whole <= (apr_off_t)fixed ||
        ((apr_size_t)whole - fixed) % (size + 1) != 0) {
        return 0;
    }
    return (unsigned)(((apr_size_t)whole - fixed) / (size + 1));
}

/* NULL when the file at path of slots of size bytes may be read (or is
 * absent, *found = 0), else why not; *found is the number of slots it
 * holds, *data their bytes. */
static const char *persisted_flaw(apr_pool_t *p, const char *path,
                                  apr_size_t size, unsigned *found,
                                  const char **data)
{
    unsigned char digest[APR_MD5_DIGESTSIZE];
    persisted_desc desc;
    apr_size_t whole, used;
    apr_finfo_t finfo;
    apr_file_t *f;
    char *buf;
    unsigned num;

    *found = 0;
    if (apr_stat(&finfo, path, APR_FINFO_SIZE | APR_FINFO_TYPE, p) != APR_SUCCESS) {
        return NULL;
    }
    if (finfo.filetype != APR_REG) {
        return "not a regular file";
    }
    if ((num = persisted_num(size, finfo.size)) == 0) {
        return apr_psprintf(p, "%" APR_OFF_T_FMT " bytes, which no number "
                            "of entries of this release makes", finfo.size);
    }
    whole = (apr_size_t)finfo.size;
    used = persisted_data_size(size, num);
    buf = apr_palloc(p, whole);
    if (apr_file_open(&f, path, APR_READ | APR_BINARY, 0, p) != APR_SUCCESS ||
        apr_file_read_full(f, buf, whole, NULL) != APR_SUCCESS) {
        return "unreadable";
    }
    apr_file_close(f);
    apr_md5(digest, buf, used);
    if (memcmp(digest, buf + used, sizeof(digest)) != 0) {
        return "its digest does not match its contents";
    }
    /* copied out: it follows a byte per slot, at any alignment */
    memcpy(&desc, buf + used + APR_MD5_DIGESTSIZE, sizeof(desc));
    if (desc.size != size || desc.num != num) {
        return "it describes another layout";
    }
    *found = num;
    *data = buf + APR_ALIGN_DEFAULT(sizeof(unsigned int));
    return NULL;
}

/* Renames a persisted file that must not be restored, so that the
 * operator can look at it and the server starts with an empty registry. */
static void set_aside(apr_pool_t *p, server_rec *s, const char *path,
                      const char *flaw)
{
    const char *aside = apr_psprintf(p, "%s.bad-%" APR_TIME_T_FMT, path,
                                     apr_time_sec(apr_time_now()));
    apr_status_t rv = apr_file_rename(path, aside, p);

    ap_log_error(APLOG_MARK, APLOG_WARNING, rv, s, BCNLOGNO(00085)
                 "the persisted member registry %s is unsound (%s): %s; "
                 "members join again with their next announcement", path,
                 flaw, rv == APR_SUCCESS
                           ? apr_pstrcat(p, "set aside as ", aside, NULL)
                           : "cannot set it aside, it is ignored");
    if (rv != APR_SUCCESS) {
        apr_file_remove(path, p);
    }
}

/*
 * Before the slotmem of num slots at path is made: a file that is not
 * whole is set aside; a sound one of another number of slots (slots=
 * changed) is read into *carried and removed, because mod_slotmem_shm
 * would restore the part of it that fits (or nothing) without a word.
 * Its contents then live in memory, and the slotmem writes the new file
 * at the next stop as it always does.
 */
static void take_persisted(apr_pool_t *p, server_rec *s, const char *path,
                           apr_size_t size, unsigned num,
                           carried_slots *carried)
{
    const char *data = NULL;
    unsigned found;
    const char *flaw = persisted_flaw(p, path, size, &found, &data);

    carried->num = 0;
    if (flaw != NULL) {
        set_aside(p, s, path, flaw);
    }
    else if (found != 0 && found != num) {
        carried->num = found;
        carried->data = data;
        apr_file_remove(path, p);
    }
}

/*
 * The registry names backends: the file mod_slotmem_shm writes at every
 * restart is created with the server's umask. Created here first, for
 * root only, it keeps that mode when it is rewritten (it is opened, not
 * replaced). Where the parent cannot (not root, another file system), the
 * file stays as httpd makes it.
 */
static void keep_private(apr_pool_t *p, const char *path)
{
    apr_file_t *f;

    if (apr_file_open(&f, path, APR_WRITE | APR_CREATE | APR_BINARY,
                      APR_FPROT_UREAD | APR_FPROT_UWRITE, p) == APR_SUCCESS) {
        apr_file_close(f);
    }
    apr_file_perms_set(path, APR_FPROT_UREAD | APR_FPROT_UWRITE);
}

/* ------------------------------------------------------------------ */
/* Opening                                                             */

/* "beacon-<hash of key>": one registry per receiver, a name that stays
 * the same across restarts so the persisted copy is found again. */
static const char *registry_name(apr_pool_t *p, const char *key)
{
    apr_uint32_t h = 2166136261u; /* FNV-1a */
    const char *c;

    for (c = key; *c; c++) {
        h = (h ^ (unsigned char)*c) * 16777619u;
    }
    return apr_psprintf(p, "beacon-%08x", h);
}

/* The persisted slotmem name of num slots of size bytes, its file set
 * aside first when it is not whole, or taken into *carried when it is of
 * another number of slots, and kept private after; NULL (logged) when
 * shared memory cannot be had. */
static ap_slotmem_instance_t *open_slots(beacon_registry *reg, apr_pool_t *pconf,
                                         server_rec *s, const char *name,
                                         apr_size_t size, unsigned num,
                                         carried_slots *carried)
{
    const char *path = ap_runtime_dir_relative(
        pconf, apr_pstrcat(pconf, PERSIST_PREFIX, name, PERSIST_SUFFIX, NULL));
    ap_slotmem_instance_t *slots = NULL;
    apr_status_t rv;

    take_persisted(pconf, s, path, size, num, carried);
    rv = reg->storage->create(&slots, name, size, num,
                              AP_SLOTMEM_TYPE_PREGRAB | AP_SLOTMEM_TYPE_PERSIST,
                              pconf);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s, BCNLOGNO(00002)
                     "cannot create the member registry %s in shared memory",
                     name);
        return NULL;
    }
    keep_private(pconf, path);
    ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, s, BCNLOGNO(00086)
                 "member registry of %s: %s", reg->key, path);
    return slots;
}

static void carry(const beacon_registry *reg, server_rec *s,
                  const carried_slots *entries, const carried_slots *claims);

beacon_registry *beacon_registry_open(apr_pool_t *pconf, server_rec *s,
                                      const char *key, unsigned entries)
{
    beacon_registry *reg = apr_pcalloc(pconf, sizeof(*reg));
    const char *name = registry_name(pconf, key);
    carried_slots old_entries, old_claims;

    reg->key = key;
    reg->entries = entries;
    reg->index_mask = 1;
    while (reg->index_mask < 2 * entries) {
        reg->index_mask <<= 1;
    }
    reg->index = apr_palloc(pconf, sizeof(*reg->index) * reg->index_mask);
    reg->index_mask--;
    reg->named = 1; /* and indexed 0: built at the first lookup */
    /* check_config made sure mod_slotmem_shm is loaded */
    reg->storage = ap_lookup_provider(AP_SLOTMEM_PROVIDER_GROUP, "shm",
                                      AP_SLOTMEM_PROVIDER_VERSION);
    reg->slots = open_slots(reg, pconf, s, name, sizeof(beacon_entry),
                            entries + FIRST_ENTRY, &old_entries);
    reg->claims = open_slots(reg, pconf, s, apr_pstrcat(pconf, name, "-ctx", NULL),
                             sizeof(claims_slot), entries, &old_claims);
    if (reg->slots == NULL || reg->claims == NULL) {
        return NULL;
    }
    carry(reg, s, &old_entries, &old_claims);
    return reg;
}

apr_size_t beacon_registry_bytes(unsigned entries)
{
    return persisted_data_size(sizeof(beacon_entry), entries + FIRST_ENTRY) +
           persisted_data_size(sizeof(claims_slot), entries);
}

unsigned beacon_registry_size(const beacon_registry *reg)
{
    return reg->entries;
}

/* ------------------------------------------------------------------ */
/* Entries                                                             */

static void *raw_slot(const beacon_registry *reg, unsigned i)
{
    void *p = NULL;

    if (reg->storage->dptr(reg->slots, i, &p) != APR_SUCCESS) {
        return NULL;
    }
    return p;
}

static beacon_entry *slot_at(const beacon_registry *reg, unsigned i)
{
    return raw_slot(reg, i + FIRST_ENTRY);
}

beacon_registry_header *beacon_registry_header_of(const beacon_registry *reg)
{
    beacon_registry_header *h = raw_slot(reg, HEADER_SLOT);

    if (h && h->magic == MARK_HEADER && h->version == PREVIOUS_VERSION) {
        h->version = REGISTRY_VERSION;
    }
    if (h && (h->magic != MARK_HEADER || h->version != REGISTRY_VERSION)) {
        h->version = REGISTRY_VERSION;
        h->max_attempts = -1;
        h->magic = MARK_HEADER;
    }
    return h;
}

static int terminated(const char *field, apr_size_t size)
{
    return memchr(field, '\0', size) != NULL;
}

static int is_sound(const beacon_entry *e)
{
    return e->magic == MARK_IN_USE && e->version == REGISTRY_VERSION &&
           terminated(e->balancer, sizeof(e->balancer)) &&
           terminated(e->url, sizeof(e->url)) &&
           terminated(e->next_url, sizeof(e->next_url)) &&
           terminated(e->admin.route, sizeof(e->admin.route)) &&
           terminated(e->admin.redirect, sizeof(e->admin.redirect)) &&
           terminated(e->admin.hcuri, sizeof(e->admin.hcuri)) &&
           terminated(e->admin.hcexpr, sizeof(e->admin.hcexpr));
}

static void upgrade(beacon_entry *e)
{
    if (e->magic == MARK_IN_USE && e->version == PREVIOUS_VERSION) {
        e->announced_flags = 0;
        e->lbfactor_changed_at = e->ramp_since = 0;
        e->ramp_base = e->ramp_unused = 0;
        memset(e->unused, 0, sizeof(e->unused));
        e->version = REGISTRY_VERSION;
    }
}

beacon_entry *beacon_registry_entry(const beacon_registry *reg, unsigned i)
{
    beacon_entry *e = slot_at(reg, i);

    if (e) {
        upgrade(e);
    }

    return e && is_sound(e) ? e : NULL;
}

static int names(const beacon_entry *e, const char *balancer, const char *url)
{
    return strcmp(e->url, url) == 0 && strcmp(e->balancer, balancer) == 0;
}

static int names_member(const beacon_entry *e, const char *balancer,
                        const char *url)
{
    return e->state != BEACON_ENTRY_MARK && names(e, balancer, url);
}

/* Entry i when it is sound and names url. The url is compared first,
 * within its field, so that a walk of a thousand entries costs a compare
 * each rather than a check of every field of each. */
static beacon_entry *entry_naming(const beacon_registry *reg, unsigned i,
                                  const char *url)
{
    const beacon_entry *raw = slot_at(reg, i);

    if (raw == NULL || raw->magic != MARK_IN_USE ||
        strncmp(raw->url, url, sizeof(raw->url)) != 0) {
        return NULL;
    }
    return beacon_registry_entry(reg, i);
}

/* Where the index looks for url first: a url field's bytes hash alike
 * whether read from an entry or given. */
static apr_uint32_t index_home(const beacon_registry *reg, const char *url)
{
    apr_ssize_t len = (apr_ssize_t)strnlen(url, BEACON_URL_MAX);

    return apr_hashfunc_default(url, &len) & reg->index_mask;
}

/* The index of every entry in use, made anew. */
static void build_index(beacon_registry *reg)
{
    unsigned i;

    memset(reg->index, 0, sizeof(*reg->index) * ((apr_size_t)reg->index_mask + 1));
    for (i = 0; i < reg->entries; i++) {
        const beacon_entry *raw = slot_at(reg, i);
        apr_uint32_t k;

        if (raw == NULL || raw->magic != MARK_IN_USE ||
            !terminated(raw->url, sizeof(raw->url))) {
            continue;
        }
        for (k = index_home(reg, raw->url); reg->index[k];
             k = (k + 1) & reg->index_mask) {
        }
        reg->index[k] = i + 1;
    }
    reg->indexed = reg->named;
}

/* The entry of url in balancer, a replay mark (mark) or a member (not),
 * by the index; its number in *at. More than half the index is empty,
 * so every probe ends. */
static beacon_entry *indexed(const beacon_registry *reg, const char *balancer,
                             const char *url, int mark, int *at)
{
    apr_uint32_t k;

    if (reg->indexed != reg->named) {
        build_index((beacon_registry *)reg); /* the index only */
    }
    for (k = index_home(reg, url); reg->index[k]; k = (k + 1) & reg->index_mask) {
        unsigned i = reg->index[k] - 1;
        beacon_entry *e = entry_naming(reg, i, url);

        if (e && (e->state == BEACON_ENTRY_MARK) == mark &&
            names(e, balancer, url)) {
            *at = (int)i;
            return e;
        }
    }
    *at = -1;
    return NULL;
}

void beacon_registry_own(const beacon_registry *reg)
{
    ((beacon_registry *)reg)->named++; /* the index only */
}

void beacon_registry_renamed(const beacon_registry *reg)
{
    ((beacon_registry *)reg)->named++; /* the index only */
}

beacon_entry *beacon_registry_find(const beacon_registry *reg,
                                   const char *balancer, const char *url)
{
    int hint = -1;

    return beacon_registry_find_hinted(reg, balancer, url, &hint);
}

beacon_entry *beacon_registry_find_hinted(const beacon_registry *reg,
                                          const char *balancer,
                                          const char *url, int *hint)
{
    if (*hint >= 0 && (unsigned)*hint < reg->entries) {
        beacon_entry *e = entry_naming(reg, (unsigned)*hint, url);

        if (e && names_member(e, balancer, url)) {
            return e;
        }
    }
    return indexed(reg, balancer, url, 0, hint);
}

beacon_entry *beacon_registry_find_mark(const beacon_registry *reg,
                                        const char *balancer, const char *url)
{
    int at;

    return indexed(reg, balancer, url, 1, &at);
}

/* A free entry, looked for from after the last one taken: entries are
 * taken in turn and freed in any order, so the next is usually there. */
static beacon_entry *free_entry(const beacon_registry *reg)
{
    beacon_registry *r = (beacon_registry *)reg; /* the hint only */
    unsigned k;

    for (k = 0; k < reg->entries; k++) {
        unsigned i = (reg->next_free + k) % reg->entries;
        beacon_entry *e = slot_at(reg, i);

        if (e && e->magic != MARK_IN_USE) {
            r->next_free = i;
            return e;
        }
    }
    return NULL;
}

/* The replay mark heard from longest ago: a member needs its place more. */
static beacon_entry *oldest_mark(const beacon_registry *reg)
{
    beacon_entry *oldest = NULL;
    unsigned i;

    for (i = 0; i < reg->entries; i++) {
        beacon_entry *e = beacon_registry_entry(reg, i);

        if (e && e->state == BEACON_ENTRY_MARK &&
            (oldest == NULL || e->last_heard < oldest->last_heard)) {
            oldest = e;
        }
    }
    return oldest;
}

static beacon_entry *fill(const beacon_registry *reg, beacon_entry *e,
                          const char *balancer, const char *url,
                          beacon_entry_state state)
{
    ((beacon_registry *)reg)->named++; /* the index only */
    memset(e, 0, sizeof(*e));
    apr_cpystrn(e->balancer, balancer, sizeof(e->balancer));
    apr_cpystrn(e->url, url, sizeof(e->url));
    e->state = state;
    e->slot = -1;
    e->last_heard = apr_time_now();
    e->version = REGISTRY_VERSION;
    e->magic = MARK_IN_USE;
    return e;
}

beacon_entry *beacon_registry_put(const beacon_registry *reg,
                                  const char *balancer, const char *url)
{
    beacon_entry *e = beacon_registry_find_mark(reg, balancer, url);

    if (e == NULL && (e = free_entry(reg)) == NULL &&
        (e = oldest_mark(reg)) == NULL) {
        return NULL;
    }
    return fill(reg, e, balancer, url, BEACON_ENTRY_MEMBER);
}

beacon_entry *beacon_registry_put_mark(const beacon_registry *reg,
                                       const beacon_entry *e)
{
    beacon_entry *mark = beacon_registry_find_mark(reg, e->balancer, e->url);

    if (mark == NULL) {
        if ((mark = free_entry(reg)) == NULL) {
            return NULL;
        }
        fill(reg, mark, e->balancer, e->url, BEACON_ENTRY_MARK);
        mark->high_ts = 0;
    }
    if (e->high_ts > mark->high_ts) {
        mark->high_ts = e->high_ts;
    }
    mark->last_heard = e->last_heard;
    return mark;
}

int beacon_registry_has_room(const beacon_registry *reg)
{
    return free_entry(reg) != NULL || oldest_mark(reg) != NULL;
}

void beacon_registry_forget(beacon_entry *e)
{
    e->magic = 0;
}

unsigned beacon_registry_damaged(const beacon_registry *reg)
{
    unsigned i, n = 0;

    for (i = 0; i < reg->entries; i++) {
        beacon_entry *e = slot_at(reg, i);

        if (e) {
            upgrade(e);
        }
        if (e && !is_sound(e) && (e->magic != 0 || e->version != 0)) {
            memset(e, 0, sizeof(*e));
            n++;
        }
    }
    return n;
}

/* ------------------------------------------------------------------ */
/* Claimed contexts                                                    */

static claims_slot *claims_at(const beacon_registry *reg, unsigned i)
{
    void *p = NULL;

    if (i >= reg->entries ||
        reg->storage->dptr(reg->claims, i, &p) != APR_SUCCESS) {
        return NULL;
    }
    return p;
}

const char *beacon_registry_claims(const beacon_registry *reg, unsigned i)
{
    const beacon_entry *e = beacon_registry_entry(reg, i);
    const claims_slot *c = claims_at(reg, i);

    if (e == NULL || c == NULL || c->magic != MARK_CLAIMS ||
        c->len >= sizeof(c->value) || c->value[c->len] != '\0' ||
        !terminated(c->url, sizeof(c->url)) || strcmp(c->url, e->url) != 0) {
        return "";
    }
    return c->value;
}

int beacon_registry_claims_in(const beacon_registry *reg, const char *balancer,
                              apr_pool_t *p, beacon_claim **claims)
{
    unsigned i;
    int n = 0;

    *claims = apr_palloc(p, sizeof(beacon_claim) * beacon_registry_size(reg));
    for (i = 0; i < beacon_registry_size(reg); i++) {
        const beacon_entry *e = beacon_registry_entry(reg, i);
        const char *ctx;

        /* a member being renamed, or forgotten, serves nothing more */
        if (e == NULL || e->state != BEACON_ENTRY_MEMBER || e->forgotten ||
            strcmp(e->balancer, balancer) != 0 ||
            *(ctx = beacon_registry_claims(reg, i)) == '\0') {
            continue;
        }
        (*claims)[n].url = apr_pstrdup(p, e->url);
        (*claims)[n].ctx = apr_pstrdup(p, ctx);
        n++;
    }
    return n;
}

int beacon_registry_claim(const beacon_registry *reg, unsigned i,
                          const char *value, apr_size_t len)
{
    const beacon_entry *e = beacon_registry_entry(reg, i);
    claims_slot *c = claims_at(reg, i);
    const char *now = beacon_registry_claims(reg, i);

    if (e == NULL || c == NULL || len >= sizeof(c->value) ||
        (strlen(now) == len && memcmp(now, value, len) == 0)) {
        return 0;
    }
    c->magic = 0; /* a child that dies mid-write leaves no half claim */
    apr_cpystrn(c->url, e->url, sizeof(c->url));
    memcpy(c->value, value, len);
    c->value[len] = '\0';
    c->len = (apr_uint32_t)len;
    c->magic = MARK_CLAIMS;
    return 1;
}

/* ------------------------------------------------------------------ */
/* Carrying a registry of another size                                 */

/* Entry i of a carried file (slot i + FIRST_ENTRY), copied out and
 * upgraded into *e; whether it is sound. */
static int carried_entry(const carried_slots *old, unsigned i, beacon_entry *e)
{
    memcpy(e, old->data + (apr_size_t)(i + FIRST_ENTRY) * sizeof(*e),
           sizeof(*e));
    upgrade(e);
    return is_sound(e);
}

/* Copies the sound entries of old of one kind (members, or replay marks)
 * into the free entries from *next on, each with its claims; counts what
 * did not fit in *dropped. */
static void carry_kind(const beacon_registry *reg, const carried_slots *old,
                       const carried_slots *claims, int marks,
                       unsigned *next, unsigned *dropped)
{
    beacon_entry e;
    unsigned i;

    for (i = 0; i + FIRST_ENTRY < old->num; i++) {
        claims_slot *c;

        if (!carried_entry(old, i, &e) || (e.state == BEACON_ENTRY_MARK) != marks) {
            continue;
        }
        if (*next >= reg->entries) {
            (*dropped)++;
            continue;
        }
        memcpy(slot_at(reg, *next), &e, sizeof(e));
        ((beacon_registry *)reg)->named++; /* the index only */
        if (i < claims->num && (c = claims_at(reg, *next)) != NULL) {
            memcpy(c, claims->data + (apr_size_t)i * sizeof(*c), sizeof(*c));
        }
        (*next)++;
    }
}

/*
 * After slots= changed, the persisted registry has another number of
 * entries: its sound entries (and their claims) go into the new one,
 * members first, then replay marks, as many as fit; the header too. A
 * claims file of another size beside an entries file of this one (a
 * half-written pair) gives its claims back by index.
 */
static void carry(const beacon_registry *reg, server_rec *s,
                  const carried_slots *entries, const carried_slots *claims)
{
    unsigned next = 0, dropped = 0, i;
    claims_slot *c;

    if (entries->num == 0) {
        for (i = 0; i < claims->num && i < reg->entries; i++) {
            if ((c = claims_at(reg, i)) != NULL) {
                memcpy(c, claims->data + (apr_size_t)i * sizeof(*c), sizeof(*c));
            }
        }
        return;
    }
    memcpy(raw_slot(reg, HEADER_SLOT), entries->data,
           sizeof(beacon_registry_header));
    carry_kind(reg, entries, claims, 0, &next, &dropped);
    carry_kind(reg, entries, claims, 1, &next, &dropped);
    ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s, BCNLOGNO(00170)
                 "member registry of %s: carried %u entries from a registry "
                 "of %u entries to one of %u (slots= changed)", reg->key,
                 next, entries->num - FIRST_ENTRY, reg->entries);
    if (dropped > 0) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, BCNLOGNO(00171)
                     "member registry of %s: %u entries did not fit in %u "
                     "and were dropped (members are kept first, then replay "
                     "marks); those members join again with their next "
                     "announcement", reg->key, dropped, reg->entries);
    }
}
