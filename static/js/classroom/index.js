// The classroom: presenter view, following a room, the live quiz, saved lessons.
// Its controls live in #classroom-bar. (Placeholder: built in this folder.)
export {};
