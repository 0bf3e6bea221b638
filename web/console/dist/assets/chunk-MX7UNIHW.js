import{a,b,c}from"./chunk-RTQOHVH7.js";import"./chunk-D4VV6HZX.js";import"./chunk-BZTDB5B4.js";export{b as Credentials,c as TestOutcome,a as providerWords};
