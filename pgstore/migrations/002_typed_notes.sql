-- A change's note, which was one text column written as
-- "<event type>@<RFC 3339 time, nanoseconds, UTC>", is two typed columns:
-- note_event, the event type ('' when the write was not labelled), and
-- note_at, the time of the change (NULL when none; timestamptz keeps
-- microseconds). Notes of that form are split; any other note (none was
-- ever written by edgeplane, whose reader could not parse it and reported
-- nothing for it) becomes the empty note it counted as.

ALTER TABLE changes
	ADD COLUMN note_event text COLLATE "C" NOT NULL DEFAULT '',
	ADD COLUMN note_at    timestamptz;

-- The time of a note, or NULL when it does not parse.
CREATE FUNCTION pg_temp.edgeplane_note_time(stamp text) RETURNS timestamptz
LANGUAGE plpgsql AS $$
BEGIN
	RETURN stamp::timestamptz;
EXCEPTION WHEN others THEN
	RETURN NULL;
END
$$;

UPDATE changes c SET note_event = split_part(c.note, '@', 1), note_at = t.at
FROM (
	SELECT revision, pg_temp.edgeplane_note_time(split_part(note, '@', 2)) AS at
	FROM changes
	WHERE note ~ '^[^@]+@[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z$'
) t
WHERE c.revision = t.revision AND t.at IS NOT NULL;

DROP FUNCTION pg_temp.edgeplane_note_time(text);

ALTER TABLE changes DROP COLUMN note;
