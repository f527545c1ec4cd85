-- Schema version 2: a change's note, which was one text column written as
-- "<event type>@<RFC 3339 time, nanoseconds, UTC>", is two typed columns:
-- note_event, the event type ('' when the write was not labelled), and
-- note_at, the time of the change in nanoseconds since the Unix epoch
-- (NULL when none). Notes of that form are split; any other note (none was
-- ever written by edgeplane, whose reader could not parse it and reported
-- nothing for it) becomes the empty note it counted as.

ALTER TABLE feed ADD COLUMN note_event TEXT NOT NULL DEFAULT '';
ALTER TABLE feed ADD COLUMN note_at INTEGER;

UPDATE feed SET
	note_event = substr(note, 1, instr(note, '@') - 1),
	note_at = CAST(strftime('%s', substr(note, instr(note, '@') + 1, 19)) AS INTEGER) * 1000000000 +
		CASE WHEN substr(note, instr(note, '@') + 20, 1) = '.'
			-- the fraction's digits, between the '.' and the 'Z', padded
			-- to nine
			THEN CAST(substr(substr(note, instr(note, '@') + 21, length(note) - instr(note, '@') - 21) || '000000000', 1, 9) AS INTEGER)
			ELSE 0
		END
WHERE (note GLOB '?*@[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]Z'
		OR note GLOB '?*@[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9]*Z')
	AND strftime('%s', substr(note, instr(note, '@') + 1, 19)) IS NOT NULL;

ALTER TABLE feed DROP COLUMN note;
